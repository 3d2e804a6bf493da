// Fuzzes the zstd read paths and the index: the input is "<u16 LE n><n shard bytes><index
// bytes>". The shard (named .zst) is read by RecordReader in skip mode; the index bytes go
// through ShardIndex::Parse and, with the shard, through ShardReader::Open and Read(i) for
// every record. Invariants: no crash, hang or leak; every record ShardReader returns has
// the length the index gives; what ShardReader reads matches RecordReader's records when
// both succeed on an index they agree on; a ShardReader that recovers from a damaged shard
// or index serves exactly the records RecordReader's skip mode returns.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/format/record_reader.h"
#include "sluice/format/shard_index.h"

namespace {

using namespace sluice;
using namespace sluice::format;

void Check(bool ok) {
  if (!ok) std::abort();
}

// A reader that recovers from damage (whatever the index bytes) serves exactly the records
// the sequential skip-mode read returned, in order: the in-memory index of what read intact
// must locate every one of them, across gaps, dropped frames and a cut last frame.
void CheckRecovery(io::FileSystem* fs, const std::string& path,
                   const std::vector<std::string>& sequential) {
  ShardReaderOptions options;
  options.on_damage = ShardDamagePolicy::kRecover;
  auto reader = ShardReader::Open(fs, path, options);
  Check(reader.ok() || reader.status().code() != StatusCode::kDataLoss);
  if (!reader.ok() || !(*reader)->damage()) return;
  Check((*reader)->num_records() == sequential.size());
  std::string out;
  for (uint64_t i = 0; i < sequential.size(); ++i) {
    Check((*reader)->Read(i, &out).ok());
    Check(out == sequential[i]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t n = std::min<size_t>(data[0] | (size_t{data[1]} << 8), size - 2);
  ByteView shard(reinterpret_cast<const char*>(data + 2), n);
  ByteView index(reinterpret_cast<const char*>(data + 2 + n), size - 2 - n);
  auto fs = io::NewMemoryFileSystem();
  const std::string path = "/s.tfrecord.zst";
  if (!fs->WriteAll(path, shard).ok()) return 0;

  RecordReaderOptions skip;
  skip.policy = CorruptionPolicy::kSkip;
  std::vector<std::string> sequential;
  if (auto reader = RecordReader::Open(fs.get(), path, skip); reader.ok()) {
    ByteView r;
    for (;;) {
      auto more = (*reader)->Next(&r);
      Check(more.ok());
      if (!*more) break;
      sequential.emplace_back(r);
    }
  }

  auto parsed = ShardIndex::Parse(index, "fuzz.idx");
  if (parsed.ok()) {
    Check(ShardIndex::Parse(parsed->Serialize(), "again.idx").ok());
  }
  if (!fs->WriteAll(ShardIndex::IndexPathFor(path), index).ok()) return 0;
  CheckRecovery(fs.get(), path, sequential);
  ShardReaderOptions options;
  options.build_missing_index = false;
  auto reader = ShardReader::Open(fs.get(), path, options);
  if (!reader.ok()) return 0;
  Check(parsed.ok());  // the lazily read index accepts only what Parse accepts
  std::string out;
  bool all_ok = true;
  std::vector<std::string> random_access;
  for (uint64_t i = 0; i < (*reader)->num_records() && i < 10000; ++i) {
    Status s = (*reader)->Read(i, &out);
    if (!s.ok()) {
      all_ok = false;
      continue;
    }
    Check(out.size() == parsed->records()[i].length);
    random_access.push_back(out);
  }
  // A valid shard read through an index that covers it exactly yields the same records.
  if (all_ok && parsed.ok() && random_access.size() == (*reader)->num_records()) {
    auto built = ShardIndex::Build(fs.get(), path);
    if (built.ok() && built->Serialize() == parsed->Serialize()) {
      Check(random_access == sequential);
    }
  }
  return 0;
}

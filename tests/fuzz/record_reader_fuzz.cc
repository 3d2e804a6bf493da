// Fuzzes RecordReader: the input (after one options byte) is a shard file in a memory file
// system, read in strict and in skip mode. Invariants: no crash, hang or leak; every
// returned record carries a valid header and payload CRC (records are zero-copy views into
// the framed stream, so the header and footer sit right around them); strict mode's records
// are a prefix of skip mode's, and all of them when strict mode did not fail (a torn tail is
// tolerated only when no intact record hides in it: issue 13, in regressions/); skipped
// stream ranges are in order and do not overlap.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/record_reader.h"

namespace {

using namespace sluice;
using namespace sluice::format;

void Check(bool ok) {
  if (!ok) std::abort();
}

std::vector<std::string> ReadAll(io::FileSystem* fs, const std::string& path,
                                 const RecordReaderOptions& options, bool* failed) {
  std::vector<std::string> out;
  auto reader = RecordReader::Open(fs, path, options);
  if (!reader.ok()) return out;
  ByteView r;
  for (;;) {
    auto more = (*reader)->Next(&r);
    if (!more.ok()) {
      Check(more.status().code() != StatusCode::kOk);
      *failed = true;
      break;
    }
    if (!*more) break;
    if (options.verify_crc) {
      Check(DecodeFixed64(r.data() - 12) == r.size());
      Check(crc32c::Unmask(DecodeFixed32(r.data() + r.size())) == crc32c::Value(r));
    }
    out.emplace_back(r);
  }
  uint64_t stream_end = 0;
  for (const SkippedRange& s : (*reader)->skipped()) {
    if (s.in_compressed_file) continue;
    Check(s.offset >= stream_end);
    stream_end = s.offset + s.length;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  std::string path = "/shard.tfrecord";
  if (flags & 1)
    path += ".zst";
  else if (flags & 2)
    path += ".gz";
  auto fs = io::NewMemoryFileSystem();
  if (!fs->WriteAll(path, ByteView(reinterpret_cast<const char*>(data + 1), size - 1)).ok()) {
    return 0;
  }
  RecordReaderOptions options;
  options.read_buffer_bytes = (flags & 4) ? 1 : size_t{1} << 20;  // tiny buffers: many refills
  options.max_record_bytes = (flags & 8) ? 64 : kDefaultMaxRecordBytes;
  options.tolerate_torn_tail = flags & 16;
  bool strict_failed = false;
  auto strict = ReadAll(fs.get(), path, options, &strict_failed);
  options.policy = CorruptionPolicy::kSkip;
  bool skip_failed = false;
  auto skip = ReadAll(fs.get(), path, options, &skip_failed);
  Check(!skip_failed);  // skip mode reads any bytes to the end
  Check(strict.size() <= skip.size());
  for (size_t i = 0; i < strict.size(); ++i) Check(strict[i] == skip[i]);
  if (!strict_failed) Check(strict == skip);
  return 0;
}

// RecordSource defaults (chunks of kDefaultChunkRecords records with nothing to fetch; an
// identity from names and counts) and the snapshot identity helpers (docs/order.md,
// "Snapshot identity").
#include "sluice/pipeline/source.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>

#include "sluice/base/thread_pool.h"
#include "sluice/pipeline/permutation.h"

namespace sluice::pipeline {
namespace {

constexpr uint64_t kIdentityTag = 0x6964656e74690007ULL;  // "identi"

std::string HumanBytes(uint64_t n) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1000 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace

uint64_t HashBytes(uint64_t key, ByteView bytes) {
  uint64_t h = CombineKey(key, bytes.size());
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t word = 0;
    for (size_t b = 0; b < 8 && i + b < bytes.size(); ++b) {
      word |= uint64_t{static_cast<uint8_t>(bytes[i + b])} << (8 * b);
    }
    h = CombineKey(h, word);
  }
  return h;
}

uint64_t SnapshotFingerprint(const std::vector<ShardIdentity>& shards) {
  uint64_t f = CombineKey(kIdentityTag, shards.size());
  for (const ShardIdentity& s : shards) {
    f = HashBytes(f, s.name);
    f = CombineKey(f, s.bytes);
    f = CombineKey(f, s.index_checksum);
    f = CombineKey(f, s.records);
  }
  return f;
}

std::string DescribeShards(const std::vector<std::string>& paths, uint64_t bytes,
                           uint64_t records) {
  std::string s = std::to_string(paths.size()) + (paths.size() == 1 ? " shard" : " shards");
  if (!paths.empty()) {
    std::string_view dir = io::Dirname(paths.front());
    bool one_dir = std::all_of(paths.begin(), paths.end(),
                               [&](const std::string& p) { return io::Dirname(p) == dir; });
    if (one_dir && !dir.empty()) s += " under " + std::string(dir);
    s += " (" + std::string(io::Basename(paths.front()));
    if (paths.size() > 1) s += " .. " + std::string(io::Basename(paths.back()));
    s += ")";
  }
  if (bytes > 0) s += ", " + HumanBytes(bytes);
  return s + ", " + std::to_string(records) + " records";
}

SnapshotIdentity RecordSource::snapshot() const {
  std::vector<ShardIdentity> shards;
  std::vector<std::string> names;
  uint64_t records = 0;
  for (uint32_t i = 0; i < shard_records().size(); ++i) {
    shards.push_back(ShardIdentity{shard_name(i), 0, 0, shard_records()[i]});
    names.push_back(shard_name(i));
    records += shard_records()[i];
  }
  return SnapshotIdentity{SnapshotFingerprint(shards), DescribeShards(names, 0, records)};
}

const std::vector<format::ShardChunk>& RecordSource::chunks(uint32_t shard) const {
  std::call_once(default_chunks_once_, [&] {
    for (uint64_t n : shard_records()) {
      default_chunks_.emplace_back();
      for (uint64_t first = 0; first < n; first += kDefaultChunkRecords) {
        format::ShardChunk c;
        c.first_record = first;
        c.records = std::min(kDefaultChunkRecords, n - first);
        default_chunks_.back().push_back(c);
      }
    }
  });
  return default_chunks_.at(shard);
}

void RecordSource::FetchChunk(uint32_t, const format::ShardChunk&, io::ReadCallback done,
                              const io::IoContext& context) const {
  ThreadPool* executor = context.executor != nullptr ? context.executor : io::IoExecutor();
  executor->Submit([done = std::move(done)] { done(std::string()); });
}

Result<std::string> RecordSource::FetchChunkNow(uint32_t shard, const format::ShardChunk& chunk,
                                                std::string buffer) const {
  std::promise<Result<std::string>> got;
  io::IoContext context;
  context.buffer = [&buffer](size_t) { return std::move(buffer); };
  FetchChunk(shard, chunk, [&got](Result<std::string> r) { got.set_value(std::move(r)); },
             context);
  return got.get_future().get();
}

void RecordSource::FetchChunks(uint32_t shard, const std::vector<format::ShardChunk>& chunks,
                               io::RangesCallback done, const io::IoContext& context) const {
  io::GatherReads(
      chunks.size(),
      [&](size_t i, io::ReadCallback one) { FetchChunk(shard, chunks[i], std::move(one), context); },
      std::move(done), context);
}

Status RecordSource::DecodeChunk(uint32_t, const format::ShardChunk&, std::string,
                                 format::DecodedChunk* out) const {
  out->bytes.clear();
  out->frame_starts.clear();
  out->reindexed = nullptr;  // nothing located: reads go through ReadInChunk
  return Status::OK();
}

Result<ByteView> RecordSource::ReadInChunk(uint32_t shard, uint64_t index,
                                           const format::ShardChunk&, const format::DecodedChunk&,
                                           std::string* scratch) const {
  return Read(shard, index, scratch);
}

}  // namespace sluice::pipeline

// Records held in memory. Each shard's records are packed into one contiguous buffer (like
// a mapped shard file), so reading in shard order streams through memory. Chunks are runs
// of records of bounded bytes with nothing to fetch (tests exercise the chunk order on them);
// the snapshot identity hashes the records themselves.
#include "sluice/base/crc32c.h"
#include "sluice/pipeline/source.h"

namespace sluice::pipeline {
namespace {

class MemorySource final : public RecordSource {
 public:
  MemorySource(std::vector<std::vector<std::string>> shards, uint64_t chunk_bytes) {
    std::vector<ShardIdentity> identity;
    uint64_t bytes = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
      Shard s;
      for (const std::string& r : shards[i]) {
        s.offsets.push_back(s.data.size());
        s.data += r;
        AddToChunks(&s.chunks, s.offsets.size() - 1, r.size(), chunk_bytes);
      }
      s.offsets.push_back(s.data.size());
      counts_.push_back(shards[i].size());
      names_.push_back("memory-shard-" + std::to_string(i));
      identity.push_back(
          ShardIdentity{names_.back(), s.data.size(), crc32c::Value(s.data), counts_.back()});
      bytes += s.data.size();
      shards_.push_back(std::move(s));
    }
    uint64_t records = 0;
    for (uint64_t c : counts_) records += c;
    identity_ = SnapshotIdentity{SnapshotFingerprint(identity),
                                 "memory: " + DescribeShards(names_, bytes, records)};
  }
  const std::vector<uint64_t>& shard_records() const override { return counts_; }
  const std::string& shard_name(uint32_t shard) const override { return names_[shard]; }
  Result<ByteView> Read(uint32_t shard, uint64_t index, std::string*) const override {
    if (shard >= shards_.size() || index >= counts_[shard]) {
      return OutOfRange("record " + std::to_string(index) + " of shard " + std::to_string(shard) +
                        " does not exist");
    }
    const Shard& s = shards_[shard];
    return ByteView(s.data).substr(s.offsets[index], s.offsets[index + 1] - s.offsets[index]);
  }
  SnapshotIdentity snapshot() const override { return identity_; }
  const std::vector<format::ShardChunk>& chunks(uint32_t shard) const override {
    return shards_.at(shard).chunks;
  }

 private:
  struct Shard {
    std::string data;               // the records, back to back
    std::vector<uint64_t> offsets;  // record i is data[offsets[i], offsets[i + 1])
    std::vector<format::ShardChunk> chunks;
  };
  // Record i of `bytes` joins the last chunk while it stays within chunk_bytes.
  static void AddToChunks(std::vector<format::ShardChunk>* chunks, uint64_t i, uint64_t bytes,
                          uint64_t chunk_bytes) {
    if (!chunks->empty() && chunks->back().decoded_bytes + bytes <= chunk_bytes) {
      ++chunks->back().records;
      chunks->back().decoded_bytes += bytes;
      return;
    }
    format::ShardChunk c;
    c.first_record = i;
    c.records = 1;
    c.decoded_bytes = bytes;
    chunks->push_back(c);
  }

  std::vector<Shard> shards_;
  std::vector<uint64_t> counts_;
  std::vector<std::string> names_;
  SnapshotIdentity identity_;
};

}  // namespace

std::shared_ptr<RecordSource> NewMemorySource(std::vector<std::vector<std::string>> shards,
                                              uint64_t chunk_bytes) {
  return std::make_shared<MemorySource>(std::move(shards), chunk_bytes);
}

}  // namespace sluice::pipeline

// Records held in memory. Each shard's records are packed into one contiguous buffer (like
// a mapped shard file), so reading in shard order streams through memory.
#include "sluice/pipeline/source.h"

namespace sluice::pipeline {
namespace {

class MemorySource final : public RecordSource {
 public:
  explicit MemorySource(std::vector<std::vector<std::string>> shards) {
    for (size_t i = 0; i < shards.size(); ++i) {
      Shard s;
      for (const std::string& r : shards[i]) {
        s.offsets.push_back(s.data.size());
        s.data += r;
      }
      s.offsets.push_back(s.data.size());
      counts_.push_back(shards[i].size());
      names_.push_back("memory-shard-" + std::to_string(i));
      shards_.push_back(std::move(s));
    }
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

 private:
  struct Shard {
    std::string data;               // the records, back to back
    std::vector<uint64_t> offsets;  // record i is data[offsets[i], offsets[i + 1])
  };
  std::vector<Shard> shards_;
  std::vector<uint64_t> counts_;
  std::vector<std::string> names_;
};

}  // namespace

std::shared_ptr<RecordSource> NewMemorySource(std::vector<std::vector<std::string>> shards) {
  return std::make_shared<MemorySource>(std::move(shards));
}

}  // namespace sluice::pipeline

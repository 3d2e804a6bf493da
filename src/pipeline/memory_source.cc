#include "sluice/pipeline/source.h"

namespace sluice::pipeline {
namespace {

class MemorySource final : public RecordSource {
 public:
  explicit MemorySource(std::vector<std::vector<std::string>> shards)
      : shards_(std::move(shards)) {
    for (size_t i = 0; i < shards_.size(); ++i) {
      counts_.push_back(shards_[i].size());
      names_.push_back("memory-shard-" + std::to_string(i));
    }
  }
  const std::vector<uint64_t>& shard_records() const override { return counts_; }
  const std::string& shard_name(uint32_t shard) const override { return names_[shard]; }
  Result<ByteView> Read(uint32_t shard, uint64_t index, std::string*) const override {
    if (shard >= shards_.size() || index >= shards_[shard].size()) {
      return OutOfRange("record " + std::to_string(index) + " of shard " + std::to_string(shard) +
                        " does not exist");
    }
    return ByteView(shards_[shard][index]);
  }

 private:
  std::vector<std::vector<std::string>> shards_;
  std::vector<uint64_t> counts_;
  std::vector<std::string> names_;
};

}  // namespace

std::shared_ptr<RecordSource> NewMemorySource(std::vector<std::vector<std::string>> shards) {
  return std::make_shared<MemorySource>(std::move(shards));
}

}  // namespace sluice::pipeline

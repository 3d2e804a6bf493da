// The read stage's plan for the node-local cache (cache_hooks.h): the chunks every rank of this
// node will read, this epoch and the next, in the order they are needed.
#include <algorithm>

#include "cache_hooks.h"
#include "sluice/io/cache/node.h"

namespace sluice::pipeline {

std::vector<NodeNeed> MergeNodePlans(std::vector<ChunkPlan> plans, uint64_t first_window) {
  std::vector<NodeNeed> out;
  ChunkNeed need;
  for (ChunkPlan& plan : plans) {
    while (plan.Next(&need)) out.push_back(NodeNeed{need, 0});
  }
  if (out.empty()) return out;
  std::stable_sort(out.begin(), out.end(), [](const NodeNeed& a, const NodeNeed& b) {
    return a.need.first_sample < b.need.first_sample;
  });
  uint64_t span = 0;  // the mean number of rank samples a window lasts
  for (const NodeNeed& n : out) span += n.need.last_sample - n.need.first_sample + 1;
  span = std::max<uint64_t>(1, span / out.size());
  const uint64_t first_sample = out.front().need.first_sample;
  for (NodeNeed& n : out) n.window = first_window + (n.need.first_sample - first_sample) / span;
  return out;
}

std::vector<io::cache::PlannedRead> NodeReads(const RecordSource& source,
                                              const std::shared_ptr<const SnapshotChunks>& chunks,
                                              const std::vector<EpochOrder>& epochs,
                                              const ShardingOptions& sharding, uint32_t first_rank,
                                              uint32_t ranks) {
  std::vector<io::cache::PlannedRead> reads;
  uint64_t next_window = 0;
  const uint32_t end_rank = std::min<uint64_t>(sharding.world_size, uint64_t{first_rank} + ranks);
  for (const EpochOrder& epoch : epochs) {
    std::vector<ChunkPlan> plans;
    for (uint32_t rank = first_rank; rank < end_rank; ++rank) {
      ShardingOptions s = sharding;
      s.rank = rank;
      plans.emplace_back(epoch.order, chunks, s, epoch.start);
    }
    for (const NodeNeed& n : MergeNodePlans(std::move(plans), next_window)) {
      reads.push_back(io::cache::PlannedRead{source.shard_name(n.need.shard),
                                             n.need.info.file_offset, n.need.info.file_bytes,
                                             n.window});
      next_window = n.window + 1;
    }
  }
  return reads;
}

Result<uint64_t> AnnounceNodePlan(const SourceConfig& config,
                                  const std::shared_ptr<const SnapshotChunks>& chunks,
                                  const std::vector<EpochOrder>& epochs) {
  if (dynamic_cast<io::cache::CachedFileSystem*>(config.read.fs) == nullptr) return uint64_t{0};
  const ShardingOptions& sharding = config.sharding;
  uint32_t first = sharding.rank, ranks = 1;
  if (config.read.cache_node_ranks > 0) {
    ranks = config.read.cache_node_ranks;
    first = sharding.rank - sharding.rank % ranks;
  } else {
    const io::cache::NodeIdentity node = io::cache::NodeFromEnvironment();
    ranks = std::max<uint32_t>(1, node.local_world_size);
    first = node.FirstLocalRank(sharding.rank);
  }
  return io::cache::AnnouncePlan(config.read.fs,
                                 NodeReads(*config.source, chunks, epochs, sharding, first, ranks));
}

}  // namespace sluice::pipeline

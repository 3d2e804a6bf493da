// The pipeline's side of the node-local cache (docs/cache.md): Dataset::Read wraps the file
// system in the cache when ReadOptions ask for it, the iterator reports the cache's figures,
// and (with the chunk-aware order) the read stage announces the node's future reads.
#pragma once

#include <memory>
#include <vector>

#include "nodes.h"
#include "sluice/io/cache/cache.h"
#include "sluice/io/cache/cached_file_system.h"
#include "sluice/pipeline/chunk_plan.h"
#include "sluice/pipeline/read.h"

namespace sluice::pipeline {

// `fs` itself, or the cached view of it when `options` turn the cache on (ReadOptions::cache:
// by default on for remote file systems, off for local ones unless cache_dir is set).
Result<io::FileSystem*> CachedFileSystemFor(io::FileSystem* fs, const ReadOptions& options);

// The cache the pipeline's source reads through, or null.
io::cache::Cache* SourceCache(const DatasetNode* root);

// One epoch of the chunk order, from the global position `start` on.
struct EpochOrder {
  std::shared_ptr<const GlobalOrder> order;
  uint64_t start = 0;
};

// One chunk read of a node's merged plan, with its window (see NodeReads).
struct NodeNeed {
  ChunkNeed need;
  uint64_t window = 0;
};

// One epoch's plans of a node's ranks merged by the rank sample that first needs each chunk
// (ranks advance together), windows numbered from `first_window`: a window is the mean span of
// rank samples a chunk window lasts, so chunks needed together share one.
std::vector<NodeNeed> MergeNodePlans(std::vector<ChunkPlan> plans, uint64_t first_window);

// The node's future reads, what the cache evicts and prefetches along (docs/cache.md, "Across
// nodes"): for each epoch in turn, the merged plans of global ranks [first_rank, first_rank +
// ranks) (clipped to the world), windows numbered on along all epochs.
std::vector<io::cache::PlannedRead> NodeReads(const RecordSource& source,
                                              const std::shared_ptr<const SnapshotChunks>& chunks,
                                              const std::vector<EpochOrder>& epochs,
                                              const ShardingOptions& sharding, uint32_t first_rank,
                                              uint32_t ranks);

// Chunks mode, when the read stage starts an epoch or restores: announces to the cache that
// `config` reads through (nothing when it reads no cache) the reads of this node's ranks
// (ReadOptions::cache_node_ranks, else the environment's node) for `epochs`. Returns the
// plan's id (0: no cache), which the read stage withdraws when it ends
// (io::cache::WithdrawPlan): no prefetching outlives the reader it was for.
Result<uint64_t> AnnounceNodePlan(const SourceConfig& config,
                                  const std::shared_ptr<const SnapshotChunks>& chunks,
                                  const std::vector<EpochOrder>& epochs);

}  // namespace sluice::pipeline

// Factories of the stage nodes (one stage per .cc file), used by Dataset to build graphs.
#pragma once

#include <memory>
#include <vector>

#include "sluice/pipeline/batch.h"
#include "sluice/pipeline/chunk_plan.h"
#include "sluice/pipeline/global_order.h"
#include "sluice/pipeline/map.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/pipeline/read.h"
#include "sluice/pipeline/source.h"
#include "stage.h"

namespace sluice::pipeline {

using NodePtr = std::shared_ptr<const DatasetNode>;

class KeptChunks;  // kept_chunks.h

// read.cc: the source, configured by shuffle and shard.
struct SourceConfig {
  std::shared_ptr<RecordSource> source;
  ReadOptions read;
  OrderOptions order{ShuffleMode::kNone, 0, 4};  // kNone/kGlobal/kBlock/kChunks at the source
  ChunkWindowOptions window;                     // kChunks: resolved when an iterator starts
  ShardingOptions sharding;
  bool shuffled = false;
  bool sharded = false;
  // The decoded chunks kept between iterators, shared by the datasets derived from one read
  // (MakeReadNode creates it when null).
  std::shared_ptr<KeptChunks> kept;
};
NodePtr MakeReadNode(SourceConfig config);
// The configuration of a read node; null when `node` is another stage.
const SourceConfig* AsReadNode(const DatasetNode* node);
// The read stage at the bottom of `node`'s graph.
const SourceConfig& SourceOf(const DatasetNode* node);
// The read node at the bottom of `node`'s graph.
inline const DatasetNode* ReadNodeOf(const DatasetNode* node) {
  while (node->input() != nullptr) node = node->input();
  return node;
}
// The snapshot's chunks of the read node `read` (computed once per node).
Result<std::shared_ptr<const SnapshotChunks>> ChunksOf(const DatasetNode* read);
// The chunk plan of the read node `read` (Dataset::ChunkPlanFor).
Result<ChunkPlan> MakeChunkPlan(const DatasetNode* read, uint64_t epoch, uint64_t memory_budget,
                                uint64_t start, uint64_t from);

// shuffle_buffer.cc: tf.data-style bounded shuffle buffer (buffer mode).
Result<NodePtr> MakeShuffleBufferNode(NodePtr input, size_t buffer_size, uint64_t seed);
// Whether `node` is a shuffle buffer; then *buffer_size and *seed receive its settings.
bool AsShuffleBufferNode(const DatasetNode* node, size_t* buffer_size, uint64_t* seed);

// map.cc: map and filter (a filter is a map that may drop the element). Built-in
// element-wise stages (parse_example) are maps of another `kind`.
Result<NodePtr> MakeMapNode(NodePtr input, MapFn fn, const MapOptions& options,
                            std::string kind = "map");
Result<NodePtr> MakeFilterNode(NodePtr input, FilterFn predicate, const FilterOptions& options);
// Map into slot: the map below `node` (`node` itself, or under order-keeping, drop-only
// stages: prefetch, repeat, take, skip, filter) that writes a feature into slots, with that
// feature's index; null when there is none (or the map is unordered).
const DatasetNode* FindSlotMap(const DatasetNode* node, size_t* feature);

// parse_example.cc
Result<NodePtr> MakeParseExampleNode(NodePtr input, std::vector<FeatureSpec> features,
                                     const ParseExampleOptions& options);

// batch.cc
Result<NodePtr> MakeBatchNode(NodePtr input, const BatchOptions& options);
Result<NodePtr> MakePaddedBatchNode(NodePtr input, const PaddedBatchOptions& options);
// bucket.cc
Result<NodePtr> MakeBucketNode(NodePtr input, const BucketOptions& options);

// prefetch.cc
NodePtr MakePrefetchNode(NodePtr input, int64_t buffer_elements);
// repeat.cc
NodePtr MakeRepeatNode(NodePtr input, int64_t epochs);
// take_skip.cc
NodePtr MakeTakeNode(NodePtr input, uint64_t count);
NodePtr MakeSkipNode(NodePtr input, uint64_t count);

}  // namespace sluice::pipeline

namespace sluice::pipeline {
class Iterator;
// iterator.cc: runs the graph ending at `root`.
Result<std::unique_ptr<Iterator>> MakePipelineIterator(NodePtr root,
                                                       const PipelineOptions& options);
}  // namespace sluice::pipeline

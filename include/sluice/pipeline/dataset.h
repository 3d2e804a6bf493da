// Dataset: an immutable description of an input pipeline (tf.data's Dataset). Each method
// returns a new Dataset with one more stage; nothing runs until MakeIterator.
//
//   auto ds = Dataset::Read({.paths = {"/data/imagenet"}});
//   auto it = ds->Shuffle({.seed = 7}).Shard(rank, world)
//                .ParseExample({{"image", DType::kString}, {"label", DType::kInt64}})
//                .Map(decode, {.name = "decode", .parallelism = 4})
//                .Batch({.batch_size = 256}).Prefetch(2)
//                .MakeIterator();
//
// Errors in building the graph (shuffle after map, an unknown feature, ...) are kept and
// reported by status() and MakeIterator().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/pipeline/batch.h"
#include "sluice/pipeline/chunk_plan.h"
#include "sluice/pipeline/element.h"
#include "sluice/pipeline/global_order.h"
#include "sluice/pipeline/iterator.h"
#include "sluice/pipeline/map.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/pipeline/pipeline_options.h"
#include "sluice/pipeline/read.h"
#include "sluice/pipeline/source.h"

namespace sluice::pipeline {

class DatasetNode;

class Dataset {
 public:
  // Shards from files (ReadOptions::paths). Opens every shard's index.
  static Result<Dataset> Read(const ReadOptions& options);
  // Records from any RecordSource (memory, tests, remote stores).
  static Dataset FromSource(std::shared_ptr<RecordSource> source, const ReadOptions& options = {});

  // Order stages: only directly on a read (before any other stage). Buffer mode adds a
  // bounded shuffle buffer stage over the shard-order stream.
  Dataset Shuffle(const ShuffleOptions& options) const;
  Dataset Shard(uint32_t rank, uint32_t world_size, Remainder remainder = Remainder::kDrop) const;

  Dataset ParseExample(std::vector<FeatureSpec> features,
                       const ParseExampleOptions& options = {}) const;
  Dataset Map(MapFn fn, const MapOptions& options = {}) const;
  Dataset Filter(FilterFn predicate, const FilterOptions& options = {}) const;
  Dataset Batch(const BatchOptions& options) const;
  Dataset Batch(size_t batch_size, bool drop_remainder = false) const {
    return Batch(BatchOptions{batch_size, drop_remainder});
  }
  Dataset PaddedBatch(const PaddedBatchOptions& options) const;
  Dataset BucketByLength(const BucketOptions& options) const;
  // Elements computed ahead in the background. kAutotune (-1): autotune picks (starts at 2).
  Dataset Prefetch(int64_t buffer_elements = kAutotune) const;
  // Runs the input `epochs` times (-1: forever), each epoch with its own order.
  Dataset Repeat(int64_t epochs = -1) const;
  Dataset Take(uint64_t count) const;
  Dataset Skip(uint64_t count) const;

  // A stage defined by a layer above pipeline/ (text's `pack`): `make` receives this
  // dataset's graph and returns it with the stage appended. src/pipeline/stage.h is the
  // authoring interface such stages implement.
  using StageFactory = std::function<Result<std::shared_ptr<const DatasetNode>>(
      std::shared_ptr<const DatasetNode> input)>;
  Dataset Append(const StageFactory& make) const;

  const Schema& schema() const;
  const Status& status() const { return status_; }
  // Records per shard of the snapshot the dataset reads (what epoch sizes derive from);
  // empty when status() is not OK.
  const std::vector<uint64_t>& shard_records() const;

  // Builds the iterator without starting it: nothing is read, mapped or prefetched until its
  // first Next, so an iterator destroyed unstarted cancels nothing.
  Result<std::unique_ptr<Iterator>> MakeIterator(const PipelineOptions& options = {}) const;

  // The chunks this dataset's rank (as set by Shard(); rank 0 of 1 without) reads in
  // `epoch` (counted from ReadOptions::epoch) from its sample `from` on, in the order its
  // read stage needs them (docs/order.md, "The chunk plan"): what a remote read-ahead or a
  // cache tier follows. `options`: those of the iterator (its memory budget sizes the
  // window); `start`: the global position the epoch was restored at (0 for a fresh epoch).
  // FailedPrecondition unless the dataset reads in chunks mode.
  Result<ChunkPlan> ChunkPlanFor(uint64_t epoch, const PipelineOptions& options = {},
                                 uint64_t from = 0, uint64_t start = 0) const;
  // The snapshot's chunks (global chunk ids -> shard, byte range, records).
  Result<std::shared_ptr<const SnapshotChunks>> Chunks() const;

 private:
  Dataset(std::shared_ptr<const DatasetNode> node, Status status)
      : node_(std::move(node)), status_(std::move(status)) {}
  Dataset With(Result<std::shared_ptr<const DatasetNode>> node) const;

  std::shared_ptr<const DatasetNode> node_;
  Status status_;
};

}  // namespace sluice::pipeline

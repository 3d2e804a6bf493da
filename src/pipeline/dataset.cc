// Dataset: builds the immutable stage graph. Errors in building it are kept in the Dataset
// and reported by MakeIterator, so call chains stay fluent.
#include "sluice/pipeline/dataset.h"

#include "nodes.h"

namespace sluice::pipeline {

Dataset Dataset::FromSource(std::shared_ptr<RecordSource> source, const ReadOptions& options) {
  if (!source) return Dataset(nullptr, InvalidArgument("read: no record source"));
  SourceConfig c;
  c.source = std::move(source);
  c.read = options;
  return Dataset(MakeReadNode(std::move(c)), Status::OK());
}

Dataset Dataset::With(Result<std::shared_ptr<const DatasetNode>> node) const {
  if (!status_.ok()) return *this;
  if (!node.ok()) return Dataset(node_, node.status());
  return Dataset(std::move(node).value(), Status::OK());
}

const Schema& Dataset::schema() const {
  static const Schema* empty = new Schema();  // intentional leak: a never-destroyed constant
  return node_ ? node_->schema() : *empty;
}

const std::vector<uint64_t>& Dataset::shard_records() const {
  static const auto* none = new std::vector<uint64_t>();  // intentional leak, as above
  return node_ && status_.ok() ? SourceOf(node_.get()).source->shard_records() : *none;
}

Dataset Dataset::Shuffle(const ShuffleOptions& options) const {
  if (!status_.ok()) return *this;
  const SourceConfig* src = AsReadNode(node_.get());
  if (src == nullptr) {
    return With(InvalidArgument(
        "shuffle must come directly after read (or shard): it sets the order the source reads "
        "in; for a shuffle later in the pipeline use shuffle mode buffer right after read"));
  }
  if (src->shuffled) return With(InvalidArgument("shuffle given twice"));
  SourceConfig c = *src;
  c.shuffled = true;
  c.order.seed = options.seed;
  c.order.block_shards = std::max<uint32_t>(1, options.block_shards);
  c.window = ChunkWindowOptions{options.window_bytes, options.window_chunks, options.lanes};
  if (options.mode == ShuffleMode::kBuffer) {
    c.order.mode = ShuffleMode::kNone;  // the buffer shuffles the shard-order stream
    return With(
        MakeShuffleBufferNode(MakeReadNode(std::move(c)), options.buffer_size, options.seed));
  }
  c.order.mode = options.mode;
  return With(MakeReadNode(std::move(c)));
}

Dataset Dataset::Shard(uint32_t rank, uint32_t world_size, Remainder remainder) const {
  if (!status_.ok()) return *this;
  if (world_size == 0 || rank >= world_size) {
    return With(InvalidArgument("shard: rank " + std::to_string(rank) + " of world size " +
                                std::to_string(world_size)));
  }
  size_t buffer_size = 0;
  uint64_t seed = 0;
  bool buffered = AsShuffleBufferNode(node_.get(), &buffer_size, &seed);
  const SourceConfig* src = AsReadNode(buffered ? node_->input() : node_.get());
  if (src == nullptr) {
    return With(InvalidArgument("shard must come directly after read or shuffle"));
  }
  if (src->sharded) return With(InvalidArgument("shard given twice"));
  SourceConfig c = *src;
  c.sharded = true;
  c.sharding = ShardingOptions{rank, world_size, remainder};
  NodePtr node = MakeReadNode(std::move(c));
  if (!buffered) return With(std::move(node));
  return With(MakeShuffleBufferNode(std::move(node), buffer_size, seed));
}

Dataset Dataset::ParseExample(std::vector<FeatureSpec> features,
                              const ParseExampleOptions& options) const {
  if (!status_.ok()) return *this;
  return With(MakeParseExampleNode(node_, std::move(features), options));
}

Dataset Dataset::Map(MapFn fn, const MapOptions& options) const {
  if (!status_.ok()) return *this;
  return With(MakeMapNode(node_, std::move(fn), options));
}

Dataset Dataset::Filter(FilterFn predicate, const FilterOptions& options) const {
  if (!status_.ok()) return *this;
  return With(MakeFilterNode(node_, std::move(predicate), options));
}

Dataset Dataset::Batch(const BatchOptions& options) const {
  if (!status_.ok()) return *this;
  return With(MakeBatchNode(node_, options));
}

Dataset Dataset::PaddedBatch(const PaddedBatchOptions& options) const {
  if (!status_.ok()) return *this;
  return With(MakePaddedBatchNode(node_, options));
}

Dataset Dataset::BucketByLength(const BucketOptions& options) const {
  if (!status_.ok()) return *this;
  return With(MakeBucketNode(node_, options));
}

Dataset Dataset::Prefetch(int64_t buffer_elements) const {
  if (!status_.ok()) return *this;
  return With(MakePrefetchNode(node_, buffer_elements));
}

Dataset Dataset::Repeat(int64_t epochs) const {
  if (!status_.ok()) return *this;
  return With(MakeRepeatNode(node_, epochs));
}

Dataset Dataset::Take(uint64_t count) const {
  if (!status_.ok()) return *this;
  return With(MakeTakeNode(node_, count));
}

Dataset Dataset::Skip(uint64_t count) const {
  if (!status_.ok()) return *this;
  return With(MakeSkipNode(node_, count));
}

Dataset Dataset::Append(const StageFactory& make) const {
  if (!status_.ok()) return *this;
  return With(make(node_));
}

Result<ChunkPlan> Dataset::ChunkPlanFor(uint64_t epoch, const PipelineOptions& options,
                                        uint64_t from, uint64_t start) const {
  SLUICE_RETURN_IF_ERROR(status_);
  return MakeChunkPlan(ReadNodeOf(node_.get()), epoch, options.memory_budget_bytes, start, from);
}

Result<std::shared_ptr<const SnapshotChunks>> Dataset::Chunks() const {
  SLUICE_RETURN_IF_ERROR(status_);
  return ChunksOf(ReadNodeOf(node_.get()));
}

Result<std::unique_ptr<Iterator>> Dataset::MakeIterator(const PipelineOptions& options) const {
  SLUICE_RETURN_IF_ERROR(status_);
  return MakePipelineIterator(node_, options);
}

}  // namespace sluice::pipeline

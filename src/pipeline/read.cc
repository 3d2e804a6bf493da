// The read stage: the pipeline's source. At rank-sample k of an epoch it reads the record
// RankSlice::RecordAt(k) of the epoch's GlobalOrder through the RecordSource, keeping
// several chunks of reads in flight on the pool (the parallel "interleave" reader).
#include <algorithm>
#include <optional>

#include "nodes.h"
#include "parallel_runner.h"

namespace sluice::pipeline {
namespace {

Schema RecordSchema() { return Schema({FeatureInfo{"record", DType::kString, Shape()}}); }

class ReadNode final : public DatasetNode {
 public:
  explicit ReadNode(SourceConfig config) : DatasetNode(nullptr, RecordSchema()), config_(config) {}
  std::string_view kind() const override { return "read"; }
  const SourceConfig& config() const { return config_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

 private:
  SourceConfig config_;
};

class ReadIterator final : public StageIterator, private ChunkWork {
 public:
  ReadIterator(PipelineContext* ctx, const ReadNode* node, uint64_t epoch)
      : StageIterator(ctx, node, nullptr),
        cfg_(node->config()),
        epoch_(epoch),
        policy_(ctx->PolicyOr(cfg_.read.on_error)),
        order_(cfg_.source->shard_records(), cfg_.order, epoch),
        slice_(&order_, cfg_.sharding, StartOf(epoch)) {
    size_t threads = ctx->pool()->size();
    RunnerOptions ro;
    ro.chunk_elements = std::max<uint32_t>(1, cfg_.read.chunk_records);
    ro.parallelism =
        cfg_.read.parallelism > 0 ? cfg_.read.parallelism : std::min<size_t>(2, threads);
    ro.window = 2 * std::max<size_t>(1, ro.parallelism);
    ro.kind = Tunable::Kind::kReadParallelism;
    ro.tunable = ctx->options().autotune && cfg_.read.parallelism == 0;
    ro.max_parallelism = std::max<size_t>(ro.parallelism, 2 * threads);
    ro.max_window = 4 * ro.max_parallelism;
    runner_ = std::make_unique<ParallelRunner>(ctx, counters_, static_cast<ChunkWork*>(this), ro);
  }
  ~ReadIterator() override { runner_->Shutdown(); }

  Result<bool> Next(Element* out) override { return runner_->Next(out); }
  void Stop() override {
    StageIterator::Stop();
    runner_->Stop();
  }
  Status Save(const Mark& delivered, StateWriter* w) const override;
  Status Restore(const StateReader& r) override;
  Status Refetch(const RecordId& id, Element* out) override;

 private:
  // Where the rank slice of `epoch` starts: a restore's position for the restored epoch,
  // the epoch's beginning for the others.
  uint64_t StartOf(uint64_t epoch) const {
    const auto& rp = ctx_->restore_point;
    return rp.valid && rp.epoch == epoch ? rp.start : 0;
  }
  Status ReadInto(Element* e, std::string* scratch) const;
  void Pull(Chunk* c, size_t max_elements) override;
  void Work(Chunk* c) override;

  const SourceConfig& cfg_;
  const uint64_t epoch_;
  const ErrorPolicy policy_;
  GlobalOrder order_;
  RankSlice slice_;
  uint64_t next_k_ = 0;  // next rank sample to pull; only Pull (serialized) touches it
  std::unique_ptr<ParallelRunner> runner_;
};

Status ReadIterator::ReadInto(Element* e, std::string* scratch) const {
  SLUICE_ASSIGN_OR_RETURN(ByteView record, cfg_.source->Read(e->id.shard, e->id.index, scratch));
  e->tensors.resize(1);
  e->tensors[0].SetScalarString(record, ctx_->buffers());
  return Status::OK();
}

void ReadIterator::Pull(Chunk* c, size_t max_elements) {
  // Records are read after the pull: size the chunk from the records read so far.
  uint64_t avg = counters_->bytes.load() / std::max<uint64_t>(1, counters_->elements.load());
  uint64_t fit = avg == 0 ? 4 : std::max<uint64_t>(1, ChunkByteCap(ctx_) / avg);
  uint64_t n = std::min<uint64_t>({max_elements, fit, slice_.size() - next_k_});
  for (uint64_t i = 0; i < n; ++i, ++next_k_) {
    Element& e = c->Slot(i);
    uint64_t position = slice_.PositionAt(next_k_);
    RecordLocation loc = order_.Locate(order_.RecordAt(position));
    e.id = RecordId{epoch_, position, loc.shard, loc.index};
    e.mark = Mark();
    e.mark.valid = true;
    e.mark.epoch = epoch_;
    e.mark.cursor = next_k_ + 1;
  }
  c->size = n;
  c->end = next_k_ == slice_.size();
}

void ReadIterator::Work(Chunk* c) {
  TransformChunk(c, *runner_, ctx_, counters_, policy_, [&](Element& e) -> Result<bool> {
    SLUICE_RETURN_IF_ERROR(ReadInto(&e, &c->scratch));
    return true;
  });
}

Status ReadIterator::Save(const Mark& delivered, StateWriter* w) const {
  uint64_t epoch = delivered.valid ? delivered.epoch : epoch_;
  uint64_t cursor = delivered.valid ? delivered.cursor : 0;
  std::optional<GlobalOrder> other;
  const GlobalOrder* order = &order_;
  if (epoch != epoch_) order = &other.emplace(cfg_.source->shard_records(), cfg_.order, epoch);
  RankSlice slice(order, cfg_.sharding, StartOf(epoch));
  w->PutU64(key_, "epoch", epoch);
  w->PutU64(key_, "consumed", slice.GlobalConsumedAfter(cursor));
  w->PutU64(key_, "seed", cfg_.order.seed);
  w->PutU64(key_, "mode", static_cast<uint64_t>(cfg_.order.mode));
  w->PutU64(key_, "block_shards", cfg_.order.block_shards);
  w->PutU64(key_, "fingerprint", order_.snapshot_fingerprint());
  w->PutU64(key_, "rank", cfg_.sharding.rank);
  w->PutU64(key_, "world", cfg_.sharding.world_size);
  return Status::OK();
}

Status ReadIterator::Restore(const StateReader& r) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t fingerprint, r.GetU64(key_, "fingerprint"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t seed, r.GetU64(key_, "seed"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t mode, r.GetU64(key_, "mode"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t block_shards, r.GetU64(key_, "block_shards"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t epoch, r.GetU64(key_, "epoch"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t consumed, r.GetU64(key_, "consumed"));
  if (fingerprint != order_.snapshot_fingerprint()) {
    return FailedPrecondition(
        "iterator state was saved on a different dataset snapshot (shard record counts differ)");
  }
  bool same_blocks =
      cfg_.order.mode != ShuffleMode::kBlock || block_shards == cfg_.order.block_shards;
  if (seed != cfg_.order.seed || mode != static_cast<uint64_t>(cfg_.order.mode) || !same_blocks) {
    return FailedPrecondition("iterator state was saved with shuffle seed " + std::to_string(seed) +
                              ", mode " +
                              std::string(ShuffleModeName(static_cast<ShuffleMode>(mode))) +
                              "; this pipeline uses seed " + std::to_string(cfg_.order.seed) +
                              ", mode " + std::string(ShuffleModeName(cfg_.order.mode)));
  }
  if (epoch != epoch_)
    return Internal("read: restored epoch " + std::to_string(epoch) +
                    " into an iterator of epoch " + std::to_string(epoch_));
  if (consumed > order_.size()) {
    return InvalidArgument("iterator state: consumed " + std::to_string(consumed) +
                           " of an epoch of " + std::to_string(order_.size()) + " records");
  }
  ctx_->restore_point = PipelineContext::RestorePoint{true, epoch, consumed};
  slice_ = RankSlice(&order_, cfg_.sharding, consumed);
  next_k_ = 0;
  return Status::OK();
}

Status ReadIterator::Refetch(const RecordId& id, Element* out) {
  std::optional<GlobalOrder> other;
  const GlobalOrder* order = &order_;
  if (id.epoch != epoch_)
    order = &other.emplace(cfg_.source->shard_records(), cfg_.order, id.epoch);
  if (id.position >= order->size()) {
    return InvalidArgument("iterator state: position " + std::to_string(id.position) +
                           " outside the epoch");
  }
  RecordLocation loc = order->Locate(order->RecordAt(id.position));
  out->id = RecordId{id.epoch, id.position, loc.shard, loc.index};
  std::string scratch;
  Status s = ReadInto(out, &scratch);
  return s.ok() ? s : s.WithContext("read: " + ctx_->DescribeRecord(out->id));
}

Result<std::unique_ptr<StageIterator>> ReadNode::MakeIterator(PipelineContext* ctx,
                                                              const IteratorArgs& args) const {
  ctx->SetSource(config_.source.get(), config_.order.seed);
  SLUICE_RETURN_IF_ERROR(
      ctx->OnSourceDamage(ctx->Counters(this), ctx->PolicyOr(config_.read.on_error)));
  return std::unique_ptr<StageIterator>(
      std::make_unique<ReadIterator>(ctx, this, config_.read.epoch + args.epoch));
}

}  // namespace

NodePtr MakeReadNode(SourceConfig config) { return std::make_shared<ReadNode>(std::move(config)); }

const SourceConfig* AsReadNode(const DatasetNode* node) {
  auto* read = dynamic_cast<const ReadNode*>(node);
  return read ? &read->config() : nullptr;
}

const SourceConfig& SourceOf(const DatasetNode* node) {
  while (node->input() != nullptr) node = node->input();
  return *AsReadNode(node);
}

}  // namespace sluice::pipeline

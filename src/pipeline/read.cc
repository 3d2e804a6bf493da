// The read stage: the pipeline's source. At rank-sample k of an epoch it reads the record
// RankSlice::RecordAt(k) of the epoch's GlobalOrder through the RecordSource, keeping
// several chunks of reads in flight on the pool (the parallel "interleave" reader). In
// chunks mode the records come from a ChunkCache that fetches and decodes the rank's chunks
// ahead along its ChunkPlan.
#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <optional>

#include "buffer_recycler.h"
#include "cache_hooks.h"
#include "chunk_cache.h"
#include "nodes.h"
#include "parallel_runner.h"
#include "task_reads.h"

namespace sluice::pipeline {
namespace {

Schema RecordSchema() { return Schema({FeatureInfo{"record", DType::kString, Shape()}}); }

// Saved snapshot descriptions are cut to this many bytes (states stay small).
constexpr size_t kMaxSnapshotNameBytes = 256;

// The unshuffled modes read a source that fetches by chunk through the chunk cache too,
// chunk after chunk (ChunkOrder::InOrder): its fetches run ahead along the plan, many in
// flight, and each chunk is fetched and decoded once instead of record by record.
bool InOrderThroughChunks(ShuffleMode mode, const RecordSource& source) {
  return (mode == ShuffleMode::kNone || mode == ShuffleMode::kBuffer) && source.reads_by_chunk();
}

class ReadNode final : public DatasetNode {
 public:
  explicit ReadNode(SourceConfig config) : DatasetNode(nullptr, RecordSchema()), config_(config) {}
  std::string_view kind() const override { return "read"; }
  const SourceConfig& config() const { return config_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;
  // The snapshot's chunks, computed once per dataset (chunks mode).
  Result<std::shared_ptr<const SnapshotChunks>> Chunks() const {
    std::call_once(chunks_once_, [&] { chunks_ = SnapshotChunks::Of(*config_.source); });
    return chunks_;
  }
  // The order options of an iterator running with `memory_budget` (chunks mode: L and K).
  Result<OrderOptions> ResolvedOrder(uint64_t memory_budget) const;

 private:
  SourceConfig config_;
  mutable std::once_flag chunks_once_;
  mutable Result<std::shared_ptr<const SnapshotChunks>> chunks_ = Cancelled("not computed");
};

Result<OrderOptions> ReadNode::ResolvedOrder(uint64_t memory_budget) const {
  OrderOptions order = config_.order;
  if (order.mode != ShuffleMode::kChunks) return order;
  SLUICE_ASSIGN_OR_RETURN(auto chunks, Chunks());
  const ChunkWindow w = ResolveChunkWindow(chunks->size(), chunks->decoded_bytes(),
                                           ChunkCacheCapacity(memory_budget), config_.window);
  order.lanes = w.lanes;
  order.lane_window = w.lane_window;
  return order;
}

// ReadOptions::chunk_records = 0 (auto): records per read task, bytes per task past which
// a task takes fewer (never fewer than kAutoTaskMinRecords).
constexpr uint32_t kAutoTaskRecords = 1024;
constexpr uint64_t kAutoTaskBytes = uint64_t{4} << 20;
constexpr uint64_t kAutoTaskMinRecords = 64;

class ReadIterator final : public StageIterator, private ChunkWork {
 public:
  ReadIterator(PipelineContext* ctx, const ReadNode* node, uint64_t epoch, OrderOptions order,
               std::shared_ptr<const SnapshotChunks> chunks)
      : StageIterator(ctx, node, nullptr),
        cfg_(node->config()),
        epoch_(epoch),
        policy_(ctx->PolicyOr(cfg_.read.on_error)),
        order_options_(order),
        chunks_(std::move(chunks)),
        identity_(cfg_.source->snapshot()),
        order_(MakeOrder(epoch)),
        slice_(order_.get(), cfg_.sharding, StartOf(epoch)) {
    size_t threads = ctx->pool()->size();
    RunnerOptions ro;
    ro.chunk_elements = cfg_.read.chunk_records > 0 ? cfg_.read.chunk_records : kAutoTaskRecords;
    ro.parallelism =
        cfg_.read.parallelism > 0 ? cfg_.read.parallelism : std::min<size_t>(2, threads);
    ro.window = 2 * std::max<size_t>(1, ro.parallelism);
    ro.kind = Tunable::Kind::kReadParallelism;
    ro.tunable = ctx->options().autotune && cfg_.read.parallelism == 0;
    ro.max_parallelism = std::max<size_t>(ro.parallelism, 2 * threads);
    ro.max_window = 4 * ro.max_parallelism;
    runner_ = std::make_unique<ParallelRunner>(ctx, counters_, static_cast<ChunkWork*>(this), ro);
    if (chunks_ != nullptr) {
      const uint64_t capacity = ChunkCacheCapacity(ctx->options().memory_budget_bytes);
      const uint64_t window_chunks =
          std::min<uint64_t>(chunks_->size(), uint64_t{std::max<uint32_t>(1, order.lanes)} *
                                                  std::max<uint64_t>(1, order.lane_window));
      // Readers: one per task running at once, the consumer's own included.
      max_held_ = MaxHeldChunks(capacity, chunks_->largest_decoded_bytes(), ro.max_parallelism + 1,
                                window_chunks * chunks_->largest_decoded_bytes() <= capacity);
      window_holds_all_ = order.mode == ShuffleMode::kChunks && window_chunks == chunks_->size();
    }
    read_before_ = cfg_.kept != nullptr && cfg_.kept->StartIterator();
    StartCache();
  }
  ~ReadIterator() override {
    runner_->Shutdown();
    idle_reads_.clear();  // the chunks they hold, before the cache goes
    cache_.reset();       // after the readers: it waits for its own fetches and decodes
    io::cache::WithdrawPlan(cfg_.read.fs, node_plan_);  // nobody reads along it any more
  }

  Result<bool> Next(Element* out) override { return HandedOn(runner_->Next(out), out); }
  bool spans() const override { return true; }
  Result<bool> NextSpan(size_t max, ElementRun* run) override {
    Result<bool> more = runner_->NextSpan(max, run);
    const Element* last = more.ok() && *more ? run->first + run->count - 1 : nullptr;
    return HandedOn(std::move(more), last);
  }
  void RunsOnly() override { packed_.store(true, std::memory_order_relaxed); }
  void Stop() override {
    StageIterator::Stop();
    runner_->Stop();
    if (cache_) cache_->Stop();
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
  std::shared_ptr<const GlobalOrder> MakeOrder(uint64_t epoch) const {
    return std::make_shared<const GlobalOrder>(cfg_.source->shard_records(), order_options_, epoch,
                                               chunks_ ? chunks_->starts() : nullptr);
  }
  // Chunks mode: a cache following this rank's plan from the slice's start.
  void StartCache();
  // After the runner handed on elements up to `last`: the cache learns how far the consumer
  // is; at the end (or an error) the idle readers' chunks go.
  Result<bool> HandedOn(Result<bool> more, const Element* last) {
    if (cache_ && more.ok() && *more) cache_->Delivered(last->mark.cursor);
    if (!more.ok() || !*more) DropIdleReads();
    if (cache_ && more.ok() && !*more) cache_->Finish();  // after the readers let go
    return more;
  }
  // Lets go of the idle readers (and the chunks they hold).
  void DropIdleReads() {
    std::lock_guard<std::mutex> lock(reads_mu_);
    idle_reads_.clear();
  }
  // The record of e->id into e, read on its own (not through the chunk cache).
  Status ReadInto(Element* e, std::string* scratch) const;
  void SetRecord(Element* e, ByteView record) const;
  void Pull(Chunk* c, size_t max_elements) override;
  void Work(Chunk* c) override;
  Status CheckSavedOrder(const StateReader& r) const;

  const SourceConfig& cfg_;
  const uint64_t epoch_;
  const ErrorPolicy policy_;
  const OrderOptions order_options_;                    // chunks mode: L and K resolved
  const std::shared_ptr<const SnapshotChunks> chunks_;  // chunks mode
  const SnapshotIdentity identity_;
  std::shared_ptr<const GlobalOrder> order_;
  RankSlice slice_;
  std::unique_ptr<ChunkCache> cache_;
  uint64_t next_k_ = 0;  // next rank sample to pull; only Pull (serialized) touches it
  std::unique_ptr<ParallelRunner> runner_;
  size_t max_held_ = 1;  // chunks mode: decoded chunks a read task may hold (MaxHeldChunks)
  bool window_holds_all_ = false;  // chunks mode, one window of every chunk (keeps at once)
  bool read_before_ = false;       // an iterator of this read started before this one
  // The consumer takes runs only (RunsOnly): tasks write the records packed into their
  // chunk (Chunk::records), not each into its element's tensor (~10% of a small-record
  // pipeline's CPU went to those tensors, the copy out of them and its bookkeeping).
  std::atomic<bool> packed_{false};
  std::atomic<uint64_t> packed_bytes_{0};  // the last task's packed records: a new chunk's take
  // The TaskReads of tasks not running: a task takes the one idle longest and gives it back,
  // so the chunks it holds and the order's windows it placed outlive a task of 64 records (a
  // shuffled window draws each task's records from dozens of chunks), and each is used in
  // turn (each lets go of the chunks of windows it is past when used). At most one per task
  // running at once, which MaxHeldChunks counts.
  std::mutex reads_mu_;
  std::deque<std::unique_ptr<TaskReads>> idle_reads_;
  uint64_t node_plan_ = 0;  // the node-local cache's plan this read announced (0: none)
};

void ReadIterator::StartCache() {
  DropIdleReads();  // they hold the old cache's chunks
  cache_.reset();
  if (chunks_ == nullptr || !cfg_.source->reads_by_chunk()) return;
  // The node-local cache under the source, if any, evicts and prefetches along the node's
  // reads of this epoch and the next. Best effort: without a plan it is an LRU of blocks.
  Result<uint64_t> plan =
      AnnounceNodePlan(cfg_, chunks_, {{order_, slice_.start()}, {MakeOrder(epoch_ + 1), 0}});
  if (plan.ok()) {
    io::cache::WithdrawPlan(cfg_.read.fs, node_plan_);  // a restore's plan replaces the last
    node_plan_ = *plan;
  }
  ChunkCache::Options o;
  o.capacity_bytes = ChunkCacheCapacity(ctx_->options().memory_budget_bytes);
  o.max_decodes = std::max<size_t>(1, ctx_->pool()->size());
  // Unshuffled reads only: a shuffled one's capacity leaves room for the next lane window,
  // decoded ahead whole while the current one is read.
  if (order_options_.mode != ShuffleMode::kChunks) {
    o.read_ahead_bytes = cfg_.source->read_ahead_bytes();
  }
  const uint64_t decoded = chunks_->decoded_bytes();
  // The whole dataset fits: what this cache decodes, the next iterator needs. Kept from the
  // first pass when the order's window holds every chunk at once anyway (the default shuffle);
  // otherwise (no shuffle, a smaller window) the cache reuses a few chunks' buffers, and
  // keeping every chunk would take memory a single pass never touches (fresh pages, each a
  // page fault), so it keeps from the read's second pass on.
  if (cfg_.read.keep_decoded_chunks && decoded > 0 && decoded <= o.capacity_bytes &&
      (window_holds_all_ || read_before_)) {
    o.kept = cfg_.kept;
  }
  cache_ =
      std::make_unique<ChunkCache>(ctx_, counters_, cfg_.source.get(), chunks_,
                                   ChunkPlan(order_, chunks_, cfg_.sharding, slice_.start()), o);
}

Status ReadIterator::ReadInto(Element* e, std::string* scratch) const {
  SLUICE_ASSIGN_OR_RETURN(ByteView record, cfg_.source->Read(e->id.shard, e->id.index, scratch));
  SetRecord(e, record);
  return Status::OK();
}

void ReadIterator::SetRecord(Element* e, ByteView record) const {
  e->tensors.resize(1);
  e->tensors[0].SetScalarString(record, ctx_->buffers());
}

void ReadIterator::Pull(Chunk* c, size_t max_elements) {
  // Records are read after the pull: size the chunk from the records read so far.
  uint64_t avg = counters_->bytes.load() / std::max<uint64_t>(1, counters_->elements.load());
  uint64_t fit = avg == 0 ? 4 : std::max<uint64_t>(1, ChunkByteCap(ctx_) / avg);
  if (cfg_.read.chunk_records == 0 && avg > 0) {  // auto: large records in smaller tasks
    fit = std::min(fit, std::max(kAutoTaskMinRecords, kAutoTaskBytes / avg));
  }
  uint64_t n = std::min<uint64_t>({max_elements, fit, slice_.size() - next_k_});
  for (uint64_t i = 0; i < n; ++i, ++next_k_) {
    Element& e = c->Slot(i);
    e.id = RecordId{epoch_, slice_.PositionAt(next_k_), 0, 0};  // located by Work, in parallel
    e.mark = Mark();
    e.mark.valid = true;
    e.mark.epoch = epoch_;
    e.mark.cursor = next_k_ + 1;
  }
  c->size = n;
  c->end = next_k_ == slice_.size();
  if (cache_) cache_->Pulled(next_k_);
}

void ReadIterator::Work(Chunk* c) {
  std::unique_ptr<TaskReads> reads;
  {
    std::lock_guard<std::mutex> lock(reads_mu_);
    if (!idle_reads_.empty()) {
      reads = std::move(idle_reads_.front());
      idle_reads_.pop_front();
    }
  }
  if (reads == nullptr) {
    reads =
        std::make_unique<TaskReads>(*order_, chunks_.get(), cache_.get(), *cfg_.source, max_held_);
  }
  reads->LocateAll(c->elems, c->size);  // first: an error names the record
  // TransformChunk calls the function once per element, in order (a dropped one included;
  // it appends nothing to the packed records, so that the kept ones stay aligned).
  const bool packed = c->packed = packed_.load(std::memory_order_relaxed);
  if (packed && c->records.capacity() == 0) {  // a new chunk: a recycled buffer, if one is kept
    c->records = BufferRecycler::Get().Take(packed_bytes_.load(std::memory_order_relaxed));
  }
  c->records.clear();
  if (packed) {
    // Room for about what the last task packed, up front: grown by doubling, a task of 4 MiB
    // touched twice that and copied it.
    const uint64_t expect = packed_bytes_.load(std::memory_order_relaxed);
    if (c->records.capacity() < expect) c->records.reserve(expect + expect / 16);
  }
  c->record_ends.clear();
  TransformChunk(c, *runner_, ctx_, counters_, policy_, [&](Element& e) -> Result<bool> {
    SLUICE_ASSIGN_OR_RETURN(ByteView record, reads->ReadNext(e.id, &c->scratch));
    if (!packed) {
      SetRecord(&e, record);
      return true;
    }
    e.tensors.clear();  // a no-op but for the first run after elements of their own
    c->records.append(record.data(), record.size());
    c->record_ends.push_back(c->records.size());
    return true;
  });
  if (packed) packed_bytes_.store(c->records.size(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(reads_mu_);
  idle_reads_.push_back(std::move(reads));
}

Status ReadIterator::Save(const Mark& delivered, StateWriter* w) const {
  uint64_t epoch = delivered.valid ? delivered.epoch : epoch_;
  uint64_t cursor = delivered.valid ? delivered.cursor : 0;
  std::shared_ptr<const GlobalOrder> order = epoch == epoch_ ? order_ : MakeOrder(epoch);
  RankSlice slice(order.get(), cfg_.sharding, StartOf(epoch));
  w->PutU64(key_, "epoch", epoch);
  w->PutU64(key_, "consumed", slice.GlobalConsumedAfter(cursor));
  w->PutU64(key_, "seed", order_options_.seed);
  w->PutU64(key_, "mode", static_cast<uint64_t>(order_options_.mode));
  w->PutU64(key_, "block_shards", order_options_.block_shards);
  if (order_options_.mode == ShuffleMode::kChunks) {
    w->PutU64(key_, "lanes", order_options_.lanes);
    w->PutU64(key_, "lane_window", order_options_.lane_window);
    w->PutU64(key_, "chunks", chunks_->size());
  }
  w->PutU64(key_, "snapshot", identity_.fingerprint);
  w->PutString(key_, "snapshot_name", identity_.description.substr(0, kMaxSnapshotNameBytes));
  w->PutU64(key_, "rank", cfg_.sharding.rank);
  w->PutU64(key_, "world", cfg_.sharding.world_size);
  return Status::OK();
}

// The snapshot and the order's definition must be the ones the state was saved with.
// Version 1 states (before the content identity) carry a fingerprint of the record counts.
Status ReadIterator::CheckSavedOrder(const StateReader& r) const {
  if (r.Has(key_, "snapshot")) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t snapshot, r.GetU64(key_, "snapshot"));
    if (snapshot != identity_.fingerprint) {
      Result<std::string> name = r.GetString(key_, "snapshot_name");
      return FailedPrecondition("iterator state was saved on another dataset snapshot: " +
                                (name.ok() ? "'" + *name + "'" : std::string("(unnamed)")) +
                                "; this pipeline reads '" + identity_.description +
                                "' (their table versions, shard names, sizes or index "
                                "checksums differ)");
    }
  } else {
    SLUICE_ASSIGN_OR_RETURN(uint64_t fingerprint, r.GetU64(key_, "fingerprint"));
    if (fingerprint != order_->snapshot_fingerprint()) {
      return FailedPrecondition(
          "iterator state (version 1) was saved on a dataset snapshot "
          "with other shard record counts; this pipeline reads '" +
          identity_.description + "'");
    }
  }
  SLUICE_ASSIGN_OR_RETURN(uint64_t seed, r.GetU64(key_, "seed"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t mode, r.GetU64(key_, "mode"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t block_shards, r.GetU64(key_, "block_shards"));
  const OrderOptions& o = order_options_;
  const std::string saved_mode(ShuffleModeName(static_cast<ShuffleMode>(mode)));
  if (seed != o.seed || mode != static_cast<uint64_t>(o.mode)) {
    std::string hint;
    if (o.mode == ShuffleMode::kChunks && saved_mode == "global") {
      hint =
          " (chunks is the default since state version 2: shuffle with mode global to "
          "continue this run)";
    }
    return FailedPrecondition("iterator state was saved with shuffle seed " + std::to_string(seed) +
                              ", mode " + saved_mode + "; this pipeline uses seed " +
                              std::to_string(o.seed) + ", mode " +
                              std::string(ShuffleModeName(o.mode)) + hint);
  }
  if (o.mode == ShuffleMode::kBlock && block_shards != o.block_shards) {
    return FailedPrecondition("iterator state was saved with block_shards " +
                              std::to_string(block_shards) + "; this pipeline uses " +
                              std::to_string(o.block_shards));
  }
  if (o.mode == ShuffleMode::kChunks) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t lanes, r.GetU64(key_, "lanes"));
    SLUICE_ASSIGN_OR_RETURN(uint64_t lane_window, r.GetU64(key_, "lane_window"));
    SLUICE_ASSIGN_OR_RETURN(uint64_t chunks, r.GetU64(key_, "chunks"));
    if (chunks != chunks_->size()) {
      return FailedPrecondition("iterator state was saved with the dataset cut into " +
                                std::to_string(chunks) + " chunks; this pipeline reads " +
                                std::to_string(chunks_->size()) +
                                " (another read chunk_bytes): read with the same chunk_bytes");
    }
    if (lanes != o.lanes || lane_window != o.lane_window) {
      return FailedPrecondition(
          "iterator state was saved with " + std::to_string(lanes) + " lanes x " +
          std::to_string(lane_window) + " chunks per window; this pipeline's order has " +
          std::to_string(o.lanes) + " x " + std::to_string(o.lane_window) +
          " (another memory budget or window option): shuffle with lanes=" + std::to_string(lanes) +
          ", window_chunks=" + std::to_string(lanes * lane_window) + " to continue that run");
    }
  }
  return Status::OK();
}

Status ReadIterator::Restore(const StateReader& r) {
  SLUICE_RETURN_IF_ERROR(CheckSavedOrder(r));
  SLUICE_ASSIGN_OR_RETURN(uint64_t epoch, r.GetU64(key_, "epoch"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t consumed, r.GetU64(key_, "consumed"));
  if (epoch != epoch_)
    return Internal("read: restored epoch " + std::to_string(epoch) +
                    " into an iterator of epoch " + std::to_string(epoch_));
  if (consumed > order_->size()) {
    return InvalidArgument("iterator state: consumed " + std::to_string(consumed) +
                           " of an epoch of " + std::to_string(order_->size()) + " records");
  }
  ctx_->restore_point = PipelineContext::RestorePoint{true, epoch, consumed};
  slice_ = RankSlice(order_.get(), cfg_.sharding, consumed);
  next_k_ = 0;
  StartCache();
  return Status::OK();
}

Status ReadIterator::Refetch(const RecordId& id, Element* out) {
  std::shared_ptr<const GlobalOrder> order = id.epoch == epoch_ ? order_ : MakeOrder(id.epoch);
  if (id.position >= order->size()) {
    return InvalidArgument("iterator state: position " + std::to_string(id.position) +
                           " outside the epoch");
  }
  RecordLocation loc = order->Locate(order->RecordAt(id.position));
  out->id = RecordId{id.epoch, id.position, loc.shard, loc.index};
  std::string scratch;
  Status s = ReadInto(out, &scratch);  // one record: not worth a chunk
  return s.ok() ? s : s.WithContext("read: " + ctx_->DescribeRecord(out->id));
}

Result<std::unique_ptr<StageIterator>> ReadNode::MakeIterator(PipelineContext* ctx,
                                                              const IteratorArgs& args) const {
  ctx->SetSource(config_.source.get(), config_.order.seed);
  SLUICE_RETURN_IF_ERROR(
      ctx->OnSourceDamage(ctx->Counters(this), ctx->PolicyOr(config_.read.on_error)));
  SLUICE_ASSIGN_OR_RETURN(OrderOptions order, ResolvedOrder(ctx->options().memory_budget_bytes));
  std::shared_ptr<const SnapshotChunks> chunks;
  if (order.mode == ShuffleMode::kChunks || InOrderThroughChunks(order.mode, *config_.source)) {
    SLUICE_ASSIGN_OR_RETURN(chunks, Chunks());
  }
  return std::unique_ptr<StageIterator>(std::make_unique<ReadIterator>(
      ctx, this, config_.read.epoch + args.epoch, order, std::move(chunks)));
}

}  // namespace

NodePtr MakeReadNode(SourceConfig config) {
  if (config.kept == nullptr) config.kept = std::make_shared<KeptChunks>();
  return std::make_shared<ReadNode>(std::move(config));
}

const SourceConfig* AsReadNode(const DatasetNode* node) {
  auto* read = dynamic_cast<const ReadNode*>(node);
  return read ? &read->config() : nullptr;
}

Result<std::shared_ptr<const SnapshotChunks>> ChunksOf(const DatasetNode* read) {
  auto* node = dynamic_cast<const ReadNode*>(read);
  if (node == nullptr) return InvalidArgument("chunks: not a read stage");
  return node->Chunks();
}

Result<ChunkPlan> MakeChunkPlan(const DatasetNode* read, uint64_t epoch, uint64_t memory_budget,
                                uint64_t start, uint64_t from) {
  auto* node = dynamic_cast<const ReadNode*>(read);
  if (node == nullptr) return InvalidArgument("chunk plan: not a read stage");
  const SourceConfig& config = node->config();
  SLUICE_ASSIGN_OR_RETURN(OrderOptions order, node->ResolvedOrder(memory_budget));
  if (order.mode != ShuffleMode::kChunks) {
    return FailedPrecondition("chunk plan: the dataset reads in shuffle mode " +
                              std::string(ShuffleModeName(order.mode)) + ", not chunks");
  }
  SLUICE_ASSIGN_OR_RETURN(auto chunks, node->Chunks());
  auto global = std::make_shared<const GlobalOrder>(config.source->shard_records(), order,
                                                    config.read.epoch + epoch, chunks->starts());
  return ChunkPlan(std::move(global), std::move(chunks), config.sharding, start, from);
}

const SourceConfig& SourceOf(const DatasetNode* node) { return *AsReadNode(ReadNodeOf(node)); }

}  // namespace sluice::pipeline

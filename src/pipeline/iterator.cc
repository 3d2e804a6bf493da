// The consumer-facing Iterator: owns the pool, buffers and budget of one pipeline, builds
// the stage iterators ("a run"), remembers the mark of the last delivered element for
// Save(), and rebuilds a fresh run on Restore().
#include "sluice/pipeline/iterator.h"

#include "autotune.h"
#include "cache_hooks.h"
#include "nodes.h"
#include "sluice/pipeline/wait_check.h"

namespace sluice::pipeline {

class Iterator::Impl {
 public:
  Impl(NodePtr root, PipelineOptions options);
  ~Impl() { DestroyRun(); }

  // A fresh run whose read stage starts at `epoch` (after ReadOptions::epoch).
  Status BuildRun(uint64_t epoch);
  Result<bool> Next(Element* out);
  Result<std::string> Save() const;
  Status Restore(ByteView state);
  PipelineStats Stats() const;
  const Schema& schema() const { return root_->schema(); }

 private:
  void DestroyRun();
  // A hash of the stage kinds (prefetch excluded: it holds no state), so a state is only
  // restored into the pipeline that saved it.
  uint64_t GraphFingerprint() const;

  NodePtr root_;
  PipelineOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::shared_ptr<BufferPool> buffers_;
  std::unique_ptr<MemoryBudget> budget_;
  std::unique_ptr<QuarantineSink> quarantine_;

  // The current run.
  std::unique_ptr<PipelineContext> ctx_;
  std::unique_ptr<StageIterator> it_;
  std::unique_ptr<Autotuner> autotuner_;
  uint64_t run_epoch_ = 0;      // IteratorArgs::epoch of the run (saved in the state)
  Status sticky_;               // an error ends the stream for good
  Mark delivered_;              // mark of the last element handed to the consumer
  std::string restored_state_;  // Save() before any Next() after Restore() returns it
  uint64_t start_ns_ = 0;
  uint64_t wait_ns_ = 0;
  uint64_t elements_ = 0;
  io::cache::Cache* cache_ = nullptr;  // the source's node-local cache, if any
  io::cache::CacheStats cache_start_;  // its figures when this iterator began
  io::HttpEngineStats network_start_;  // the process's HTTP figures when the run began
};

Iterator::Impl::Impl(NodePtr root, PipelineOptions options)
    : root_(std::move(root)),
      options_(std::move(options)),
      pool_(std::make_unique<ThreadPool>(options_.threads)),
      // Free buffers kept for reuse may fill half the memory budget: a pipeline holds again
      // what it held before, and a batch of 256 float32 3x224x224 images alone is 154 MB (a
      // 256 MB limit made every such batch a fresh mmap, page faults and all).
      buffers_(BufferPool::Create(options_.memory_budget_bytes / 2)),
      budget_(std::make_unique<MemoryBudget>(options_.memory_budget_bytes)) {
  io::FileSystem* fs = options_.quarantine_fs ? options_.quarantine_fs : io::LocalFileSystem();
  quarantine_ = std::make_unique<QuarantineSink>(fs, options_.quarantine_path);
  cache_ = SourceCache(root_.get());
  if (cache_ != nullptr) cache_start_ = cache_->stats();
}

Status Iterator::Impl::BuildRun(uint64_t epoch) {
  run_epoch_ = epoch;
  network_start_ = io::ProcessHttpStats();
  ctx_ = std::make_unique<PipelineContext>(options_, pool_.get(), buffers_.get(), budget_.get(),
                                           quarantine_.get());
  ctx_->RegisterGraph(root_.get());
  SLUICE_ASSIGN_OR_RETURN(it_, root_->MakeIterator(ctx_.get(), IteratorArgs{epoch}));
  // A quarantine file that cannot be written fails now, before any record is consumed, not
  // at the first bad record.
  if (ctx_->uses_quarantine()) SLUICE_RETURN_IF_ERROR(quarantine_->Open());
  autotuner_ = std::make_unique<Autotuner>(ctx_.get(), pool_->size());
  sticky_ = Status::OK();
  delivered_ = Mark();
  restored_state_.clear();
  start_ns_ = NowNs();
  wait_ns_ = 0;
  elements_ = 0;
  return Status::OK();
}

void Iterator::Impl::DestroyRun() {
  if (it_) it_->Stop();  // everything upstream stops at its next element
  it_.reset();           // each stage waits for its own tasks
  autotuner_.reset();
  ctx_.reset();
}

Result<bool> Iterator::Impl::Next(Element* out) {
  if (!sticky_.ok()) return sticky_;
  uint64_t t0 = NowNs();
  Result<bool> more = it_->Next(out);
  uint64_t t1 = NowNs();
  wait_ns_ += t1 - t0;
  // An element produced after the consumer's wait check failed (Ctrl-C) is not delivered:
  // the caller gets the failure, and Save() the state before that element.
  const ScopedWaitCheck* check = ScopedWaitCheck::Current();
  if (more.ok() && check != nullptr && !check->failure().ok()) more = check->failure();
  if (!more.ok()) {
    sticky_ = more.status();
    return sticky_;
  }
  if (!*more) {
    Status closed = quarantine_->Close();
    if (!closed.ok()) sticky_ = closed;
    return closed.ok() ? Result<bool>(false) : Result<bool>(closed);
  }
  ++elements_;
  delivered_ = out->mark;
  ctx_->PublishDelivered(delivered_);
  restored_state_.clear();
  if (options_.autotune) autotuner_->Tick(t1, wait_ns_);
  return true;
}

uint64_t Iterator::Impl::GraphFingerprint() const {
  uint64_t h = 0x7374616765730007ULL;  // "stages"
  for (const DatasetNode* n = root_.get(); n != nullptr; n = n->input()) {
    if (n->kind() == "prefetch") continue;
    for (char c : n->kind()) h = CombineKey(h, static_cast<uint8_t>(c));
  }
  return h;
}

Result<std::string> Iterator::Impl::Save() const {
  if (!restored_state_.empty()) return restored_state_;
  StateWriter w;
  w.PutU64("pipeline", "graph", GraphFingerprint());
  w.PutU64("pipeline", "epoch", run_epoch_);
  SLUICE_RETURN_IF_ERROR(it_->Save(delivered_, &w));
  return w.Finish();
}

Status Iterator::Impl::Restore(ByteView state) {
  SLUICE_ASSIGN_OR_RETURN(StateReader r, StateReader::Parse(state));
  SLUICE_ASSIGN_OR_RETURN(uint64_t graph, r.GetU64("pipeline", "graph"));
  if (graph != GraphFingerprint()) {
    return FailedPrecondition(
        "iterator state was saved by a pipeline with different stages; it restores only into "
        "the same stages (thread counts, prefetch, rank and world size may differ)");
  }
  uint64_t previous_epoch = run_epoch_;
  DestroyRun();
  SLUICE_RETURN_IF_ERROR(BuildRun(r.GetU64Or("pipeline", "epoch", options_.epoch)));
  Status s = it_->Restore(r);
  if (!s.ok()) {  // leave a usable iterator at the start rather than a half-restored one
    DestroyRun();
    SLUICE_RETURN_IF_ERROR(BuildRun(previous_epoch));
    return s;
  }
  restored_state_ = std::string(state);
  return Status::OK();
}

PipelineStats Iterator::Impl::Stats() const {
  PipelineStats s;
  s.wall_seconds = static_cast<double>(NowNs() - start_ns_) * 1e-9;
  s.consumer_wait_seconds = static_cast<double>(wait_ns_) * 1e-9;
  s.elements = elements_;
  s.threads = static_cast<uint32_t>(pool_->size());
  s.memory_budget_bytes = budget_->limit();
  s.memory_used_bytes = budget_->used();
  s.memory_peak_bytes = budget_->peak();
  s.autotune_steps = autotuner_ ? autotuner_->steps() : 0;
  s.buffer_allocations = buffers_->allocations();
  s.stages = ctx_->SnapshotStages();
  if (cache_ != nullptr) s.cache = cache_->stats().Since(cache_start_);
  io::HttpEngineStats network = io::Since(io::ProcessHttpStats(), network_start_);
  if (network.requests > 0 || network.in_flight > 0 || network.queued > 0) s.network = network;
  return s;
}

// ---- Iterator ----

Iterator::Iterator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Iterator::~Iterator() = default;
Result<bool> Iterator::Next(Element* out) { return impl_->Next(out); }
Result<std::string> Iterator::Save() const { return impl_->Save(); }
Status Iterator::Restore(ByteView state) { return impl_->Restore(state); }
const Schema& Iterator::schema() const { return impl_->schema(); }
PipelineStats Iterator::stats() const { return impl_->Stats(); }

Status CheckPipelineOptions(const PipelineOptions& options) {
  if (options.memory_budget_bytes == 0) {
    return InvalidArgument(
        "memory_budget_bytes must be > 0: it bounds what the pipeline buffers (0 does not mean "
        "unlimited; the default is 1 GiB)");
  }
  if (options.threads > kMaxPipelineThreads) {
    return InvalidArgument("threads = " + std::to_string(options.threads) + " exceeds " +
                           std::to_string(kMaxPipelineThreads) +
                           " (0 = one per CPU this process may use)");
  }
  return Status::OK();
}

Result<std::unique_ptr<Iterator>> MakePipelineIterator(NodePtr root,
                                                       const PipelineOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckPipelineOptions(options));
  auto impl = std::make_unique<Iterator::Impl>(std::move(root), options);
  SLUICE_RETURN_IF_ERROR(impl->BuildRun(options.epoch));
  return std::make_unique<Iterator>(std::move(impl));
}

}  // namespace sluice::pipeline

#include "parallel_runner.h"

#include <algorithm>
#include <utility>

#include "buffer_recycler.h"
#include "sluice/pipeline/wait_check.h"
#include "stage.h"

namespace sluice::pipeline {

void Chunk::Drop(size_t i) {
  std::rotate(elems.begin() + static_cast<ptrdiff_t>(i),
              elems.begin() + static_cast<ptrdiff_t>(i) + 1,
              elems.begin() + static_cast<ptrdiff_t>(size));
  --size;
}

uint64_t Chunk::ElementBytes() const {
  if (packed) return (record_ends.empty() ? 0 : record_ends.back()) + size * 2 * sizeof(uint64_t);
  uint64_t bytes = 0;
  for (size_t i = 0; i < size; ++i) bytes += elems[i].bytes();
  return bytes;
}

namespace {

// Chunks of finished runners whose elements hold no tensors (a read stage's packed runs:
// records, ends and Element objects only), kept process-wide for the next runner: a chunk of
// 1,024 fresh elements is 128 KiB of fresh memory, a page fault per 4 KiB and the elements'
// construction, at every iterator (an epoch of small records: ~5% of its CPU). Elements with
// tensors are not kept: their buffers may belong to the finished pipeline's pool.
class ChunkRecycler {
 public:
  static ChunkRecycler& Get() {
    static ChunkRecycler* recycler = new ChunkRecycler;  // never destroyed: used at exit
    return *recycler;
  }
  std::unique_ptr<Chunk> Take() {
    std::lock_guard<std::mutex> g(mu_);
    if (free_.empty()) return nullptr;
    std::unique_ptr<Chunk> c = std::move(free_.back());
    free_.pop_back();
    return c;
  }
  // Keeps `c` if its elements hold no tensors and there is room (its buffers above
  // kMaxKeptBufferBytes go to the BufferRecycler, which bounds what it keeps); else its
  // packed records' buffer goes to the BufferRecycler.
  void Give(std::unique_ptr<Chunk> c) {
    const bool bare = c->slots.empty() &&
                      std::all_of(c->elems.begin(), c->elems.end(),
                                  [](const Element& e) { return e.tensors.empty(); });
    if (bare && c->elems.size() <= kMaxElements) {
      if (c->records.capacity() > kMaxKeptBufferBytes) {
        BufferRecycler::Get().Give(std::move(c->records));
        c->records = std::string();
      }
      if (c->scratch.capacity() > kMaxKeptBufferBytes) c->scratch = std::string();
      if (c->record_ends.capacity() * sizeof(uint64_t) > kMaxKeptBufferBytes) {
        c->record_ends = std::vector<uint64_t>();
      }
      std::lock_guard<std::mutex> g(mu_);
      if (free_.size() < kMaxChunks) {
        free_.push_back(std::move(c));
        return;
      }
    }
    BufferRecycler::Get().Give(std::move(c->records));
  }

 private:
  // At most ~10 MiB kept: 16 chunks (a read stage's window at 4 tasks) of up to 2,048
  // elements (256 KiB) and three buffers of up to 128 KiB each.
  static constexpr size_t kMaxChunks = 16;
  static constexpr size_t kMaxElements = 2048;
  static constexpr size_t kMaxKeptBufferBytes = 128 << 10;
  std::mutex mu_;
  std::vector<std::unique_ptr<Chunk>> free_;  // guarded by mu_
};

}  // namespace

ParallelRunner::ParallelRunner(PipelineContext* ctx, StageCounters* counters, ChunkWork* work,
                               RunnerOptions options)
    : ctx_(ctx),
      gate_(std::make_shared<TaskGate>()),
      counters_(counters),
      work_(work),
      options_(options),
      parallelism_(options.parallelism),
      window_(std::max<size_t>(1, options.window)) {
  counters_->parallelism.store(static_cast<uint32_t>(std::max<size_t>(1, parallelism_)));
  counters_->capacity.store(window_ * options_.chunk_elements);
  gate_->runner = this;
  if (options_.tunable) {
    // A stage rebuilt for the next epoch (repeat) keeps what autotune learnt in the last one.
    if (uint64_t tuned = counters_->tuned.load()) {
      std::lock_guard<std::mutex> l(mu_);
      SetValueLocked(tuned);  // no scheduling yet: the stage owning this runner is not built
    }
    ctx_->AddTunable(this);
  }
}

ParallelRunner::~ParallelRunner() {
  Shutdown();
  for (Chunk* c : slots_) {
    if (c) ctx_->budget()->Release(c->charged);
  }
  for (Chunk* c : ready_) ctx_->budget()->Release(c->charged);
  if (cur_) ctx_->budget()->Release(cur_->charged);
  counters_->buffered.store(0);
  // The next iterator's read tasks pack their records into these, not into fresh memory.
  for (auto& c : owned_) ChunkRecycler::Get().Give(std::move(c));
}

void ParallelRunner::Shutdown() {
  if (options_.tunable) ctx_->RemoveTunable(this);
  {
    std::lock_guard<std::mutex> g(gate_->mu);
    gate_->runner = nullptr;  // queued tasks will find the gate closed
  }
  Stop();
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] { return running_ == 0; });
}

void ParallelRunner::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    stopping_flag_.store(true, std::memory_order_relaxed);
  }
  cv_.notify_all();
}

bool ParallelRunner::RoomLocked() const {
  uint64_t outstanding = pulled_ - consumed_;
  if (outstanding == 0) return true;  // progress is always allowed
  return outstanding < window_ && !ctx_->budget()->exhausted();
}

void ParallelRunner::MaybeScheduleLocked(bool by_consumer) {
  if (stopping_ || input_done_) return;
  const bool consumer_pulls = by_consumer && consumer_quick_;
  while (!consumer_pulls && scheduled_ + running_ < parallelism_ && RoomLocked() &&
         pulled_ - consumed_ + scheduled_ < window_) {
    ++scheduled_;
    counters_->Add(counters_->tasks, 1);
    ctx_->pool()->Submit([gate = gate_] { RunTask(gate); });
  }
  // Output-blocked time: nothing runs because the consumer has not taken what is ready.
  bool throttled = scheduled_ + running_ == 0 && !RoomLocked();
  if (throttled && throttled_since_ == 0) {
    throttled_since_ = NowNs();
  } else if (!throttled && throttled_since_ != 0) {
    counters_->Add(counters_->output_wait_ns, NowNs() - throttled_since_);
    throttled_since_ = 0;
  }
}

Chunk* ParallelRunner::AcquireChunkLocked() {
  if (free_.empty()) {
    std::unique_ptr<Chunk> kept = ChunkRecycler::Get().Take();
    owned_.push_back(kept ? std::move(kept) : std::make_unique<Chunk>());
    return owned_.back().get();
  }
  Chunk* c = free_.back();
  free_.pop_back();
  return c;
}

bool ParallelRunner::RunOneHoldingInput(bool by_consumer) {
  Chunk* c = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stopping_ && !input_done_ && RoomLocked()) {
      c = AcquireChunkLocked();
      c->Reset(pulled_++);
      if (options_.ordered) slots_.push_back(nullptr);
    }
  }
  if (c == nullptr) {
    input_mu_.unlock();
    { std::lock_guard<std::mutex> l(mu_); }  // a waiter that saw input_mu_ taken is waiting now
    cv_.notify_all();
    return false;
  }
  uint64_t t0 = NowNs();
  work_->Pull(c, options_.chunk_elements);
  uint64_t t1 = NowNs();
  const uint64_t pull_avg = avg_pull_ns_.load(std::memory_order_relaxed);
  avg_pull_ns_.store(pull_avg == 0 ? t1 - t0 : (pull_avg * 7 + (t1 - t0)) / 8,
                     std::memory_order_relaxed);
  constexpr uint64_t kClockedChunkNs = 200000;  // 0.2 ms
  const bool clocked = avg_chunk_ns_.load(std::memory_order_relaxed) >= kClockedChunkNs;
  ThreadClock clock1 = clocked ? ReadThreadClock() : ThreadClock();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (c->end || !c->status.ok()) input_done_ = true;
    input_mu_.unlock();
    MaybeScheduleLocked(by_consumer);  // the next pull can start while this chunk is worked on
  }
  if (c->size > 0) work_->Work(c);
  ThreadClock clock2 = clocked ? ReadThreadClock() : ThreadClock();
  uint64_t t2 = NowNs();
  uint64_t avg = avg_chunk_ns_.load(std::memory_order_relaxed);
  avg_chunk_ns_.store(avg == 0 ? t2 - t1 : (avg * 7 + (t2 - t1)) / 8, std::memory_order_relaxed);

  const uint64_t bytes = c->ElementBytes();
  counters_->Add(counters_->input_wait_ns, t1 - t0);
  counters_->Add(counters_->busy_ns, BusyNs(t2 - t1, clock1, clock2));
  counters_->Add(counters_->elements, c->size);
  counters_->Add(counters_->chunks, 1);
  if (by_consumer) counters_->Add(counters_->helped_chunks, 1);
  counters_->Add(counters_->bytes, bytes);
  ctx_->budget()->Charge(bytes);
  {
    std::lock_guard<std::mutex> l(mu_);
    c->charged = bytes;
    avg_chunk_bytes_ = avg_chunk_bytes_ == 0 ? bytes : (avg_chunk_bytes_ * 7 + bytes) / 8;
    if (options_.ordered) {
      slots_[c->seq - consumed_] = c;
    } else {
      c->end = false;  // in completion order the runner decides where the stream ends
      ready_.push_back(c);
    }
    counters_->buffered.store((pulled_ - consumed_) * options_.chunk_elements);
  }
  cv_.notify_all();
  return true;
}

void ParallelRunner::RunTask(const std::shared_ptr<TaskGate>& gate) {
  ParallelRunner* r = nullptr;
  {
    std::lock_guard<std::mutex> g(gate->mu);
    r = gate->runner;
    if (r == nullptr) return;
    std::lock_guard<std::mutex> l(r->mu_);
    --r->scheduled_;
    if (r->stopping_) return;
    ++r->running_;  // under the gate: the destructor now waits for this task
  }
  r->TaskLoop();
}

void ParallelRunner::TaskLoop() {
  bool contended = false;
  for (;;) {
    if (!input_mu_.try_lock()) {
      contended = true;  // whoever pulls will hand the chunk over; no point in queueing
      break;
    }
    if (!RunOneHoldingInput(false)) break;
  }
  std::lock_guard<std::mutex> l(mu_);
  --running_;
  if (!contended) MaybeScheduleLocked();  // e.g. autotune raised the parallelism meanwhile
  cv_.notify_all();
}

Chunk* ParallelRunner::PopReadyLocked() {
  Chunk* c = nullptr;
  if (options_.ordered) {
    if (slots_.empty() || slots_.front() == nullptr) return nullptr;
    c = slots_.front();
    slots_.pop_front();
  } else {
    if (ready_.empty()) return nullptr;
    c = ready_.front();
    ready_.pop_front();
  }
  ++consumed_;
  counters_->buffered.store((pulled_ - consumed_) * options_.chunk_elements);
  return c;
}

Result<Chunk*> ParallelRunner::TakeChunk() {
  std::unique_lock<std::mutex> l(mu_);
  MaybeScheduleLocked(true);
  for (;;) {
    if (stopping_) return Cancelled("iterator cancelled");
    if (Chunk* c = PopReadyLocked()) {
      MaybeScheduleLocked(true);
      if (options_.consumer_first) taken_ns_ = NowNs();
      return c;
    }
    if (input_done_ && pulled_ == consumed_) return nullptr;  // unordered end of stream
    if (!input_done_ && RoomLocked() && input_mu_.try_lock()) {
      l.unlock();
      RunOneHoldingInput(true);
      l.lock();
      continue;
    }
    SLUICE_RETURN_IF_ERROR(WaitWithCheck(cv_, l));  // Ctrl-C from Python lands here
  }
}

void ParallelRunner::Recycle(Chunk* c) {
  ctx_->budget()->Release(c->charged);
  std::lock_guard<std::mutex> l(mu_);
  c->charged = 0;
  free_.push_back(c);
  MaybeScheduleLocked(true);
}

Result<bool> ParallelRunner::Next(Element* out) {
  SLUICE_ASSIGN_OR_RETURN(bool more, Advance());
  if (!more) return false;
  const size_t i = cur_->next++;
  std::swap(*out, cur_->elems[i]);
  if (cur_->packed) {  // a consumer that said it takes runs only did not: unpack the record
    const uint64_t begin = i == 0 ? 0 : cur_->record_ends[i - 1];
    out->tensors.resize(1);
    out->tensors[0].SetScalarString(
        ByteView(cur_->records).substr(begin, cur_->record_ends[i] - begin), ctx_->buffers());
  }
  return true;
}

Result<bool> ParallelRunner::NextSpan(size_t max, ElementRun* run) {
  SLUICE_ASSIGN_OR_RETURN(bool more, Advance());
  if (more) {
    const size_t i = cur_->next;
    run->first = &cur_->elems[i];
    run->count = std::min(std::max<size_t>(max, 1), cur_->size - i);
    run->bytes = cur_->packed ? cur_->records.data() : nullptr;
    run->ends = cur_->packed ? cur_->record_ends.data() + i : nullptr;
    run->begin = cur_->packed && i > 0 ? cur_->record_ends[i - 1] : 0;
    cur_->next += run->count;
  }
  return more;
}

Result<bool> ParallelRunner::Advance() {
  for (;;) {
    if (cur_ != nullptr) {
      if (cur_->next < cur_->size) return true;
      if (!cur_->status.ok()) return cur_->status;
      if (cur_->end) return false;
      if (options_.consumer_first) {  // back for the next chunk: how long was it away?
        consumer_quick_ = NowNs() - taken_ns_ < options_.quick_consumer_ns &&
                          avg_pull_ns_.load(std::memory_order_relaxed) < options_.cheap_pull_ns;
      }
      Recycle(cur_);
      cur_ = nullptr;
    }
    if (finished_) return false;
    Result<Chunk*> c = TakeChunk();
    if (!c.ok()) return c.status();
    if (*c == nullptr) {
      finished_ = true;
      return false;
    }
    cur_ = *c;
  }
}

size_t ParallelRunner::value() const {
  std::lock_guard<std::mutex> l(mu_);
  return options_.kind == Kind::kPrefetchDepth ? window_ : parallelism_;
}

void ParallelRunner::set_value(size_t v) {
  std::lock_guard<std::mutex> l(mu_);
  SetValueLocked(v);
  MaybeScheduleLocked();
}

void ParallelRunner::SetValueLocked(size_t v) {
  if (options_.kind == Kind::kPrefetchDepth) {
    window_ = std::clamp<size_t>(v, 1, options_.max_window);
  } else {
    parallelism_ = std::clamp<size_t>(v, 1, options_.max_parallelism);
    window_ = std::max(window_, options_.chunks_per_task * parallelism_);
    counters_->parallelism.store(static_cast<uint32_t>(parallelism_));
  }
  counters_->capacity.store(window_ * options_.chunk_elements);
  counters_->tuned.store(options_.kind == Kind::kPrefetchDepth ? window_ : parallelism_);
}

uint64_t ParallelRunner::unit_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return options_.kind == Kind::kPrefetchDepth ? avg_chunk_bytes_
                                               : options_.chunks_per_task * avg_chunk_bytes_;
}

void PullFromInput(StageIterator* input, const ParallelRunner& runner, Chunk* c,
                   size_t max_elements, uint64_t deadline_ns) {
  const uint64_t cap = ChunkByteCap(runner.context());
  uint64_t bytes = 0;
  while (c->size < max_elements) {
    if (runner.stopping()) {
      c->status = Cancelled("iterator cancelled");
      return;
    }
    Result<bool> more = input->Next(&c->Slot(c->size));
    if (!more.ok()) {
      c->status = more.status();
      return;
    }
    if (!*more) {
      c->end = true;
      return;
    }
    bytes += c->elems[c->size].bytes();
    ++c->size;
    if (bytes >= cap || (deadline_ns != 0 && NowNs() > deadline_ns)) return;
  }
}

}  // namespace sluice::pipeline

// ParallelRunner: how work moves between threads in a pipeline. Read-ahead, parallel map
// and prefetch are all "pull a run of elements from the input (one thread at a time, in
// order), transform the run (many threads at once), hand runs to the consumer in order".
//
// Work moves in chunks (runs of elements), never one element at a time: one mutex handoff
// per chunk instead of per element is what keeps the per-element overhead in nanoseconds.
//
// No thread ever waits for work nobody is doing: when the consumer needs a chunk that no
// task has started, it pulls and transforms it itself ("help while waiting"). A pipeline
// therefore makes progress with any pool size, including a pool busy elsewhere, and waits
// happen only on chunks another thread is actively producing.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "context.h"
#include "sluice/pipeline/element.h"
#include "sluice/pipeline/wait_check.h"

namespace sluice::pipeline {

// A run of elements moving through a runner. Elements are reused: a recycled chunk keeps
// its Element objects (and their buffers) for the next run.
struct Chunk {
  std::vector<Element> elems;  // [0, size) valid
  size_t size = 0;
  size_t next = 0;       // the consumer's read position
  uint64_t seq = 0;      // pull order
  Status status;         // an error after the valid elements; ends the stream
  bool end = false;      // the input ended after these elements
  uint64_t charged = 0;  // bytes charged to the memory budget
  std::string scratch;   // read buffer of the task working on this chunk
  // Map into slot: per pulled element (pull order, before drops), its tentative slot or -1.
  std::vector<int64_t> slots;
  // Packed (the read stage, for a consumer of runs only): the elements' records end to end,
  // element i's ending at record_ends[i]; their tensors are empty.
  bool packed = false;
  std::string records;
  std::vector<uint64_t> record_ends;

  void Reset(uint64_t s) {
    size = next = 0;
    seq = s;
    status = Status::OK();
    end = false;
    charged = 0;
    packed = false;
  }
  // Bytes held by the valid elements (memory accounting, stats): a packed record counts as
  // the scalar string tensor it stands for.
  uint64_t ElementBytes() const;
  // Element i to fill (keeps existing Element objects for reuse).
  Element& Slot(size_t i) {
    if (elems.size() <= i) elems.resize(i + 1);
    return elems[i];
  }
  // Removes element i, keeping the order of the others (on_error = skip).
  void Drop(size_t i);
};

// What a runner does, implemented by the stage.
class ChunkWork {
 public:
  virtual ~ChunkWork() = default;
  // Fills `chunk` with up to `max_elements` input elements; sets chunk->end when the input
  // is exhausted and chunk->status on an input error. Called by one thread at a time, in
  // sequence order.
  virtual void Pull(Chunk* chunk, size_t max_elements) = 0;
  // Transforms chunk->elems[0, size); may drop elements or set status (truncating size).
  // Runs concurrently for different chunks.
  virtual void Work(Chunk* chunk) = 0;
};

struct RunnerOptions {
  size_t chunk_elements = 64;  // elements per chunk
  size_t parallelism = 1;      // tasks at once; 0 = only the consumer's thread works
  size_t window = 2;           // chunks pulled but not yet consumed (ready or in flight)
  // The window autotune keeps per task when it sets the parallelism (window >= this x
  // parallelism). Default: 2.
  size_t chunks_per_task = 2;
  bool ordered = true;  // deliver in pull order (else in completion order)
  Tunable::Kind kind = Tunable::Kind::kMapParallelism;
  bool tunable = false;        // register with autotune
  size_t max_parallelism = 1;  // autotune's bounds
  size_t max_window = 2;
  // A quick consumer (back for its next chunk within quick_consumer_ns of taking the last
  // one) pulls the next chunk itself: no pool task is started on its behalf. Such a task
  // could get ahead of the consumer by at most that gap, minus its own wake-up, and mostly
  // wins the race for the input: the pull then moves to a pool thread (which the upstream
  // stages need) while the consumer sleeps until it is done. A consumer away for longer (a
  // training step) gets the chunks pulled ahead as usual. For stages whose work is the pull.
  // Default: false.
  bool consumer_first = false;
  // Default: 10 us, about the wake-up latency of a parked pool thread.
  uint64_t quick_consumer_ns = 10'000;
  // ... and only while a pull takes less than this on average. Past it a wake-up per chunk
  // costs nothing that matters, and a pool task pulling ahead keeps the consumer's thread
  // out of the way of the pool threads (a batch of 256 decoded images takes ~50 ms: the
  // consumer pulling it itself ran three busy threads on two CPUs, 10% more CPU per image).
  // Default: 1 ms.
  uint64_t cheap_pull_ns = 1'000'000;
};

class ParallelRunner final : public Tunable {
 public:
  ParallelRunner(PipelineContext* ctx, StageCounters* counters, ChunkWork* work,
                 RunnerOptions options);
  ~ParallelRunner() override;
  // Stops and waits for the running tasks (they exit at the next element); tasks not started
  // yet will do nothing. Stages call it in their destructor, before their members go away.
  void Shutdown();

  // The next element in order (or completion order). Sticky: after false or an error,
  // returns the same.
  Result<bool> Next(Element* out);
  // The next run of up to `max` (>= 1) elements, in place in the chunk that holds them
  // (its packed records too), valid until the next call of Next or NextSpan (which may
  // recycle the chunk). Same order and stickiness as Next.
  Result<bool> NextSpan(size_t max, ElementRun* run);
  // Makes tasks exit and wakes waits. Thread-safe.
  void Stop();
  bool stopping() const { return stopping_flag_.load(std::memory_order_relaxed); }
  const std::atomic<bool>* stopping_flag() const { return &stopping_flag_; }

  const PipelineContext* context() const { return ctx_; }

  // Tunable.
  Kind kind() const override { return options_.kind; }
  StageCounters* counters() const override { return counters_; }
  size_t value() const override;
  void set_value(size_t v) override;
  uint64_t unit_bytes() const override;

 private:
  // Autotune's new value (clamped to the bounds), remembered in counters_->tuned.
  void SetValueLocked(size_t v);
  bool RoomLocked() const;
  // Submits tasks while there is room and parallelism to spare. `by_consumer`: called on the
  // consumer's thread, which submits nothing while it pulls the chunks itself (a quick
  // consumer, RunnerOptions::consumer_first).
  void MaybeScheduleLocked(bool by_consumer = false);
  // Pulls and transforms one chunk. Called with input_mu_ held; releases it. Returns false
  // when it pulled nothing (no room, input done, stopping).
  bool RunOneHoldingInput(bool by_consumer);
  // A task's entry: queued tasks reach the runner through the gate, which the destructor
  // closes, so destruction never waits for tasks that have not started.
  struct TaskGate {
    std::mutex mu;
    ParallelRunner* runner;  // guarded by mu; null once the runner is being destroyed
  };
  static void RunTask(const std::shared_ptr<TaskGate>& gate);
  void TaskLoop();
  // The next chunk to deliver, or null at the end of the stream.
  Result<Chunk*> TakeChunk();
  Chunk* PopReadyLocked();
  Chunk* AcquireChunkLocked();
  void Recycle(Chunk* c);

  PipelineContext* const ctx_;
  const std::shared_ptr<TaskGate> gate_;
  StageCounters* const counters_;
  ChunkWork* const work_;
  const RunnerOptions options_;

  // Serializes ChunkWork::Pull (the input iterator is not thread-safe). Only ever
  // try_locked: a thread finding it taken knows someone is pulling and moves on or waits on
  // cv_, so no pool thread blocks behind a puller. Lock order: gate, input_mu_, mu_.
  std::mutex input_mu_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  size_t parallelism_;
  size_t window_;
  uint64_t pulled_ = 0;      // chunks pulled (next sequence number)
  uint64_t consumed_ = 0;    // chunks handed to the consumer
  bool input_done_ = false;  // the input ended or failed: no more pulls
  bool stopping_ = false;
  size_t scheduled_ = 0;          // tasks submitted, not started
  size_t running_ = 0;            // tasks running
  uint64_t throttled_since_ = 0;  // when it last stopped running ahead for lack of room
  uint64_t avg_chunk_bytes_ = 0;
  // Moving average of a chunk's wall time. Chunks much shorter than a scheduler time slice
  // are rarely preempted, so they skip the thread clock (two syscalls) in the busy time.
  std::atomic<uint64_t> avg_chunk_ns_{0};
  std::atomic<uint64_t> avg_pull_ns_{0};  // moving average of Pull's time
  std::deque<Chunk*> slots_;  // ordered: slots_[i] is chunk consumed_ + i (null: in flight)
  std::deque<Chunk*> ready_;  // unordered: completed chunks
  std::vector<Chunk*> free_;
  std::vector<std::unique_ptr<Chunk>> owned_;

  std::atomic<bool> stopping_flag_{false};  // mirror of stopping_ for lock-free checks

  // Consumer side (only the consumer's thread touches these).
  // Makes cur_ a chunk with an element left (true), or returns the end or the error.
  Result<bool> Advance();
  Chunk* cur_ = nullptr;
  bool finished_ = false;
  uint64_t taken_ns_ = 0;        // when TakeChunk last returned a chunk (consumer_first)
  bool consumer_quick_ = false;  // it came back for the last one within quick_consumer_ns
};

}  // namespace sluice::pipeline

namespace sluice::pipeline {

class StageIterator;

// Pulls up to `max_elements` elements from `input` into the chunk (setting end / status).
// It stops early, once the chunk holds an element, when the chunk's bytes reach
// ChunkByteCap() (so a chunk never dwarfs the memory budget) or, with a nonzero
// `deadline_ns` (a NowNs() time), when the deadline passed: cheap elements travel in runs,
// expensive ones alone.
void PullFromInput(StageIterator* input, const ParallelRunner& runner, Chunk* c,
                   size_t max_elements, uint64_t deadline_ns);
// Bytes one chunk should hold at most: 1/16 of the memory budget.
inline uint64_t ChunkByteCap(const PipelineContext* ctx) {
  return std::max<uint64_t>(1, ctx->budget()->limit() / 16);
}

// Applies `fn` (Result<bool>(Element&): false drops the element) to every element of a
// chunk under an error policy: a failing element is dropped (skip / quarantine) or ends the
// chunk with the error naming stage and record (raise). Stops at the next element when the
// runner is stopping, or, on the consumer's thread, when its wait check fails (Ctrl-C),
// polled every kElementsPerWaitCheck elements: a chunk of slow elements must not delay the
// check by the whole chunk (functions slower than that poll MapContext::CheckInterrupt).
inline constexpr size_t kElementsPerWaitCheck = 8;
template <typename Fn>
void TransformChunk(Chunk* c, const ParallelRunner& runner, PipelineContext* ctx,
                    StageCounters* counters, ErrorPolicy policy, Fn&& fn) {
  size_t i = 0;
  for (size_t done = 0; i < c->size; ++done) {
    Status interrupted;
    if (runner.stopping()) {
      interrupted = Cancelled(counters->name + ": iterator cancelled");
    } else if (done % kElementsPerWaitCheck == 0) {
      interrupted = CheckWaitInterrupt();
    }
    if (!interrupted.ok()) {
      c->status = std::move(interrupted);
      c->size = i;
      return;
    }
    Element& e = c->elems[i];
    Result<bool> keep = fn(e);
    if (keep.ok()) {
      if (*keep) {
        ++i;
      } else {
        c->Drop(i);
      }
      continue;
    }
    Status s = ctx->OnRecordError(counters, policy, e.id, keep.status());
    if (!s.ok()) {
      c->status = s;
      c->size = i;
      return;
    }
    c->Drop(i);
  }
}

}  // namespace sluice::pipeline

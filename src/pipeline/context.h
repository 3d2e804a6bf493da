// PipelineContext: what the stage iterators of one run of a pipeline share (pool, buffers,
// memory budget, per-stage counters, error policy, restore information).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/thread_pool.h"
#include "sluice/pipeline/element.h"
#include "sluice/pipeline/pipeline_options.h"
#include "sluice/pipeline/source.h"
#include "sluice/pipeline/stats.h"

namespace sluice::pipeline {

class DatasetNode;
class SlotPlanner;

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// What the scheduler says about the calling thread so far (Linux /proc/thread-self/schedstat;
// zeros where that is not available).
struct ThreadClock {
  uint64_t run_ns = 0;   // on a CPU
  uint64_t wait_ns = 0;  // runnable but waiting for a CPU (preempted, or not yet scheduled)
};
ThreadClock ReadThreadClock();
// The busy time of an interval of `wall_ns` in which the thread's clock went from `a` to `b`:
// the wall time minus the time the thread waited for a CPU. Time blocked (sleeping, waiting
// for I/O) is the stage's own latency and counts; time waiting for a CPU does not: on a
// machine with more runnable threads than cores (the trainer, other processes) it inflates
// every stage by how many threads it runs and how long its chunks are, not by its work.
uint64_t BusyNs(uint64_t wall_ns, const ThreadClock& a, const ThreadClock& b);

// Bytes held by pipeline buffers against the budget. Stages charge what they hold and
// stop running ahead while the budget is exhausted (backpressure); they never fail for it.
class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit) : limit_(limit) {}
  void Charge(uint64_t n) {
    uint64_t now = used_.fetch_add(n, std::memory_order_relaxed) + n;
    uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void Release(uint64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  bool exhausted() const { return used() >= limit_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> peak_{0};
};

// Live counters of one stage, updated from many threads; StageStats is their snapshot.
struct StageCounters {
  std::string name;
  std::atomic<uint64_t> elements{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> busy_ns{0};
  std::atomic<uint64_t> input_wait_ns{0};
  std::atomic<uint64_t> output_wait_ns{0};
  std::atomic<uint64_t> buffered{0};
  std::atomic<uint64_t> capacity{0};
  std::atomic<uint32_t> parallelism{1};
  std::atomic<uint64_t> chunks{0};         // runner stages: chunks produced ...
  std::atomic<uint64_t> helped_chunks{0};  // ... of which by the consumer's thread
  std::atomic<uint64_t> tasks{0};          // pool tasks submitted
  std::atomic<uint64_t> skipped{0};
  std::atomic<uint64_t> quarantined{0};
  // Read stage in chunks mode (chunk_cache.h).
  std::atomic<uint64_t> chunk_decodes{0};
  std::atomic<uint64_t> chunk_fetched_bytes{0};
  std::atomic<uint64_t> chunk_loads_on_demand{0};  // loaded by a reader, not ahead
  std::atomic<uint64_t> chunk_evictions{0};
  std::atomic<uint64_t> chunk_takes{0};  // ChunkCache::Get calls (a held chunk needs none)
  std::atomic<uint64_t> chunk_kept{0};   // kept chunks used instead of a decode (KeptChunks)
  // The value autotune last set for this stage's knob (0: never). Counters outlive repeat's
  // per-epoch rebuilds of the stage, so the next epoch's runner starts where this one was
  // tuned instead of ramping up from the start value again.
  std::atomic<uint64_t> tuned{0};

  void Add(std::atomic<uint64_t>& c, uint64_t v) { c.fetch_add(v, std::memory_order_relaxed); }
  StageStats Snapshot() const;
};

// A knob autotune may turn (docs/pipeline.md, "Autotune"). Implemented by parallel stages.
class Tunable {
 public:
  enum class Kind { kMapParallelism, kReadParallelism, kPrefetchDepth };
  virtual ~Tunable() = default;
  virtual Kind kind() const = 0;
  virtual StageCounters* counters() const = 0;
  virtual size_t value() const = 0;
  virtual void set_value(size_t v) = 0;
  // Bytes one more unit of value() is expected to hold (for the memory budget check).
  virtual uint64_t unit_bytes() const = 0;
};

// Appends the identities of quarantined records to a file (opened on first use).
class QuarantineSink {
 public:
  QuarantineSink(io::FileSystem* fs, std::string path) : fs_(fs), path_(std::move(path)) {}
  ~QuarantineSink() { (void)Close(); }
  // Opens the file (once): a path that cannot be written fails here.
  Status Open();
  Status Add(const std::string& line);
  Status Close();

 private:
  Status OpenLocked();

  io::FileSystem* fs_;
  std::string path_;
  std::mutex mu_;
  std::unique_ptr<io::WritableFile> file_;  // guarded by mu_
};

class PipelineContext {
 public:
  PipelineContext(const PipelineOptions& options, ThreadPool* pool, BufferPool* buffers,
                  MemoryBudget* budget, QuarantineSink* quarantine);

  const PipelineOptions& options() const { return options_; }
  ThreadPool* pool() const { return pool_; }
  // CPUs this process may use (ThreadPool::DefaultThreads), read once per iterator: stages
  // rebuilt every epoch do not read /proc and cgroup files again.
  size_t cpus() const { return cpus_; }
  BufferPool* buffers() const { return buffers_; }
  MemoryBudget* budget() const { return budget_; }

  // Registers the graph (root first, following input()) so every node gets a stable index:
  // the source is 0. Called once per run.
  void RegisterGraph(const DatasetNode* root);
  size_t NodeIndex(const DatasetNode* node) const;
  // "3.batch": the prefix of a stage's keys in saved state.
  std::string StateKey(const DatasetNode* node) const;
  StageCounters* Counters(const DatasetNode* node);
  // The Mark::counters slot of a counting stage (same slot across repeat's rebuilds).
  Result<size_t> CounterSlot(const DatasetNode* node);
  // Counters of all stages, source first.
  std::vector<StageStats> SnapshotStages() const;

  // The source whose shards name records in errors, and the order seed (per-sample RNG).
  void SetSource(const RecordSource* source, uint64_t seed) {
    source_ = source;
    seed_ = seed;
  }
  uint64_t seed() const { return seed_; }
  // "shard 'data-00001.tfrecord' record 17 (epoch 0, position 123)"
  std::string DescribeRecord(const RecordId& id) const;
  // Applies `policy` to a failed record: OK when the record is to be skipped (counted, maybe
  // quarantined), else `error` prefixed with the stage name and the record's identity. The
  // policy is for bad records: a failed transfer or system call (IoError: a read whose
  // retries ran out, a refused file) says nothing about the record and is never skipped,
  // nor is a cancellation.
  Status OnRecordError(StageCounters* stage, ErrorPolicy policy, const RecordId& id,
                       const Status& error);
  // Applies `policy` to the damaged shards the source recovered from (RecordSource::
  // damage()), when the read stage's iterator starts: raise returns the first one's error;
  // skip and quarantine count the records lost in the stage's `skipped` (at least one per
  // shard) and quarantine writes a line per shard, with "-" for the record index.
  Status OnSourceDamage(StageCounters* stage, ErrorPolicy policy);
  // A stage's policy (its own, else the pipeline's). Stages ask when their iterator is made,
  // which is how the iterator knows at its start whether it needs the quarantine file.
  ErrorPolicy PolicyOr(const std::optional<ErrorPolicy>& stage_policy) const {
    ErrorPolicy p = stage_policy.value_or(options_.on_error);
    if (p == ErrorPolicy::kQuarantine) uses_quarantine_.store(true, std::memory_order_relaxed);
    return p;
  }
  bool uses_quarantine() const { return uses_quarantine_.load(std::memory_order_relaxed); }

  // Where a restore put the source: the slice of `epoch` starts at global position `start`
  // (later epochs start at 0).
  struct RestorePoint {
    bool valid = false;
    uint64_t epoch = 0;
    uint64_t start = 0;
  };
  RestorePoint restore_point;

  // The counters of the last element delivered to the consumer, published by the root so
  // stateful stages can forget history no Save() can ask for any more.
  std::array<std::atomic<uint64_t>, kMaxStageCounters> delivered_counters{};
  std::atomic<uint64_t> delivered_epoch{0};
  // Stateful stages tag their counter values with the iterator instance (repeat rebuilds
  // them each epoch), so a watermark is only compared with counts of the same instance.
  uint64_t NewInstanceTag() { return next_tag_.fetch_add(1, std::memory_order_relaxed) & 0xffff; }
  static uint64_t TaggedCount(uint64_t tag, uint64_t count) { return (tag << 48) | count; }
  static uint64_t CountOf(uint64_t tagged) { return tagged & ((uint64_t{1} << 48) - 1); }
  static uint64_t TagOf(uint64_t tagged) { return tagged >> 48; }
  // Publishes the mark of an element just delivered to the consumer.
  void PublishDelivered(const Mark& m) {
    if (!m.valid) return;
    for (size_t i = 0; i < kMaxStageCounters; ++i) {
      delivered_counters[i].store(m.counters[i], std::memory_order_relaxed);
    }
    delivered_epoch.store(m.epoch, std::memory_order_release);
  }

  // Map into slot (slot_planner.h): the planner a batch iterator set up for the map node
  // below it. The map iterators built after it (repeat rebuilds them) share it.
  void SetSlotPlanner(const DatasetNode* map, std::shared_ptr<SlotPlanner> planner);
  std::shared_ptr<SlotPlanner> SlotPlannerFor(const DatasetNode* map);

  // Autotune's knobs. Stages register in their constructor and unregister in the destructor.
  void AddTunable(Tunable* t);
  void RemoveTunable(Tunable* t);
  // Calls f(knobs) under the registry lock: the knobs stay alive (their stages unregister
  // in their destructors, which wait for this lock).
  template <typename F>
  void WithTunables(F&& f) {
    std::lock_guard<std::mutex> l(tunables_mu_);
    f(tunables_);
  }

 private:
  const PipelineOptions& options_;
  ThreadPool* pool_;
  size_t cpus_;
  BufferPool* buffers_;
  MemoryBudget* budget_;
  QuarantineSink* quarantine_;
  const RecordSource* source_ = nullptr;
  uint64_t seed_ = 0;
  mutable std::atomic<bool> uses_quarantine_{false};

  std::vector<const DatasetNode*> nodes_;  // source first; set before iterators exist
  std::vector<std::unique_ptr<StageCounters>> counters_;  // parallel to nodes_
  std::mutex slots_mu_;
  std::map<const DatasetNode*, size_t> slots_;  // guarded by slots_mu_

  std::mutex planners_mu_;
  std::map<const DatasetNode*, std::shared_ptr<SlotPlanner>> planners_;  // guarded by planners_mu_

  std::atomic<uint64_t> next_tag_{1};
  std::mutex tunables_mu_;
  std::vector<Tunable*> tunables_;  // guarded by tunables_mu_
};

}  // namespace sluice::pipeline

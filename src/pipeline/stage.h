// The two halves of every stage (tf.data's split): a DatasetNode is an immutable description
// (shared by all iterators made from it); a StageIterator is the stateful thing that runs.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "context.h"
#include "sluice/pipeline/element.h"
#include "state.h"

namespace sluice::pipeline {

class StageIterator;

struct IteratorArgs {
  uint64_t epoch = 0;  // epochs after the read stage's first one (repeat advances it)
};

class DatasetNode {
 public:
  DatasetNode(std::shared_ptr<const DatasetNode> input, Schema schema)
      : input_(std::move(input)), schema_(std::move(schema)) {}
  virtual ~DatasetNode() = default;

  virtual std::string_view kind() const = 0;  // "read", "map", "batch", ...
  // Stage name in stats and errors: the kind, or "map:decode_image" for named stages.
  virtual std::string name() const { return std::string(kind()); }
  const Schema& schema() const { return schema_; }
  const DatasetNode* input() const { return input_.get(); }
  const std::shared_ptr<const DatasetNode>& input_ptr() const { return input_; }

  virtual Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                              const IteratorArgs& args) const = 0;

 private:
  std::shared_ptr<const DatasetNode> input_;  // null for the source
  Schema schema_;
};

class StageIterator {
 public:
  // `input` is null for the source.
  StageIterator(PipelineContext* ctx, const DatasetNode* node,
                std::unique_ptr<StageIterator> input);
  virtual ~StageIterator() = default;
  StageIterator(const StageIterator&) = delete;
  StageIterator& operator=(const StageIterator&) = delete;

  // Produces the next element into *out, reusing its storage. false at the end of the
  // stream. Errors are sticky for stages that run ahead.
  virtual Result<bool> Next(Element* out) = 0;
  // Runs of elements in place, for a consumer that copies them out (batch): up to `max`
  // (>= 1) elements in *run, owned by this stage and valid until its next call of Next or
  // NextSpan; false at the end of the stream; same elements, order and errors as Next.
  // Offered where `spans()` is true (stages that keep their elements in runs: the read
  // stage); the default is Unimplemented.
  virtual bool spans() const { return false; }
  virtual Result<bool> NextSpan(size_t max, ElementRun* run);
  // The consumer will call NextSpan only, before its first call: a stage may then keep the
  // records of its runs packed (ElementRun::bytes) rather than one tensor per element.
  virtual void RunsOnly() {}
  // Writes this stage's state as of `delivered` (the mark of the last element the consumer
  // received; !valid: nothing delivered since the start) and asks its input to do the same.
  virtual Status Save(const Mark& delivered, StateWriter* w) const;
  // Positions a fresh iterator (no Next yet) at a saved state, input included.
  virtual Status Restore(const StateReader& r);
  // Re-produces the element of record `id` through this stage (how stateful stages refill
  // what they held at Save time). Default: Unimplemented.
  virtual Status Refetch(const RecordId& id, Element* out);
  // Stops background work and wakes blocked waits here and upstream; Next then returns
  // Cancelled. Thread-safe, idempotent.
  virtual void Stop();

  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }
  StageCounters* counters() const { return counters_; }

 protected:
  Status StoppedError() const { return Cancelled(node_->name() + ": iterator cancelled"); }

  PipelineContext* ctx_;
  const DatasetNode* node_;
  StageCounters* counters_;
  std::string key_;  // state key prefix, e.g. "3.batch"
  std::unique_ptr<StageIterator> input_;

 private:
  std::atomic<bool> stopped_{false};
};

// Measures one call in kSampleEvery (at random, so periodic patterns such as a batch
// waiting every third call do not alias) of a synchronous stage, since a clock read per
// element per stage would cost more than the stage itself, and scales the sample up.
class SampledTimer {
 public:
  static constexpr uint32_t kSampleEvery = 8;
  bool Sample() {
    state_ ^= state_ << 13;  // xorshift32
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return (state_ & (kSampleEvery - 1)) == 0;
  }

 private:
  uint32_t state_ = 0x9e3779b9u;
};

}  // namespace sluice::pipeline

namespace sluice::pipeline {

// Timing and counting of a synchronous stage's Next(): on sampled calls it measures the time
// spent in the input's Next (input wait) and the rest (busy), scaled by the sampling rate.
// Element and byte counts are gathered locally and published on sampled calls.
class SyncTiming {
 public:
  explicit SyncTiming(StageCounters* counters) : counters_(counters) {}
  void Begin() {
    sampled_ = sampler_.Sample();
    if (sampled_) {
      start_ = NowNs();
      input_ns_ = 0;
    }
  }
  Result<bool> InputNext(StageIterator* input, Element* e) {
    if (!sampled_) return input->Next(e);
    uint64_t t = NowNs();
    Result<bool> r = input->Next(e);
    input_ns_ += NowNs() - t;
    return r;
  }
  // For stages that pull many inputs before working on them (batch): one timed span around
  // all the pulls instead of two clock reads per input (at 256 inputs per batch those reads
  // were 8% of a cheap pipeline's time).
  void InputSpanBegin() {
    if (sampled_) span_start_ = NowNs();
  }
  void InputSpanEnd() {
    if (sampled_) input_ns_ += NowNs() - span_start_;
  }
  bool sampled() const { return sampled_; }
  // Elements are counted exactly; `bytes` is only looked at on sampled calls (and scaled).
  void End(uint64_t elements, uint64_t bytes) {
    if (elements) counters_->Add(counters_->elements, elements);
    if (!sampled_) return;
    constexpr uint64_t k = SampledTimer::kSampleEvery;
    uint64_t total = NowNs() - start_;
    counters_->Add(counters_->busy_ns, (total - std::min(total, input_ns_)) * k);
    counters_->Add(counters_->input_wait_ns, input_ns_ * k);
    counters_->Add(counters_->bytes, bytes * k);
  }

 private:
  StageCounters* counters_;
  SampledTimer sampler_;
  bool sampled_ = false;
  uint64_t start_ = 0;
  uint64_t span_start_ = 0;
  uint64_t input_ns_ = 0;
};

}  // namespace sluice::pipeline

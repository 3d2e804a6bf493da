// The state of a stage that holds records across its emissions (bucket_by_length, text's
// pack): after each emission it snapshots what it holds as record positions; the snapshots
// of emissions the consumer has not received yet are kept, so Save can answer "as of the
// element delivered" although the stage runs ahead. Restore re-produces held records through
// the input (Refetch), never storing bytes.
#pragma once

#include <algorithm>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "context.h"
#include "state.h"

namespace sluice::pipeline {

class EmissionHistory {
 public:
  EmissionHistory(PipelineContext* ctx, size_t slot)
      : ctx_(ctx), slot_(slot), tag_(ctx->NewInstanceTag()) {}

  // One emission: `held` describes what the stage holds after it; `last_in` is the mark of
  // the latest input element. Sets the emitted element's mark.
  void Record(std::vector<uint64_t> held, const Mark& last_in, Mark* out_mark) {
    std::lock_guard<std::mutex> l(mu_);
    ++emitted_;
    *out_mark = last_in;
    out_mark->counters[slot_] = PipelineContext::TaggedCount(tag_, emitted_);
    uint64_t tagged = ctx_->delivered_counters[slot_].load(std::memory_order_relaxed);
    if (PipelineContext::TagOf(tagged) == tag_) {
      uint64_t delivered = PipelineContext::CountOf(tagged);
      while (!history_.empty() && history_.front().emission < delivered) history_.pop_front();
    }
    history_.push_back(Snapshot{emitted_, std::move(held)});
  }

  // Writes under `key`: the emission count, what was held then, and the input's mark.
  Status Save(const std::string& key, const std::string& stage, const Mark& delivered,
              StateWriter* w) const {
    std::vector<uint64_t> held;
    uint64_t at = 0;
    if (delivered.valid) {
      at = PipelineContext::CountOf(delivered.counters[slot_]);
      std::lock_guard<std::mutex> l(mu_);
      auto it = std::find_if(history_.begin(), history_.end(),
                             [&](const Snapshot& s) { return s.emission == at; });
      if (it == history_.end()) {
        return Internal(stage + ": no snapshot of emission " + std::to_string(at));
      }
      held = it->held;
    }
    w->PutU64(key, "emitted", at);
    w->PutU64s(key, "held", std::move(held));
    w->PutU64(key, "in_epoch", delivered.epoch);
    w->PutU64s(key, "in_counters",
               std::vector<uint64_t>(delivered.counters.begin(), delivered.counters.end()));
    return Status::OK();
  }

  // Reads what Save wrote: returns the held description and sets *last_in to the mark the
  // restored input continues from (no mark when nothing had been emitted).
  Result<std::vector<uint64_t>> Restore(const std::string& key, const std::string& stage,
                                        const StateReader& r, Mark* last_in) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t emitted, r.GetU64(key, "emitted"));
    SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> held, r.GetU64s(key, "held"));
    SLUICE_ASSIGN_OR_RETURN(uint64_t in_epoch, r.GetU64(key, "in_epoch"));
    SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> in_counters, r.GetU64s(key, "in_counters"));
    if (in_counters.size() != kMaxStageCounters) {
      return InvalidArgument("iterator state: malformed " + stage + " state");
    }
    *last_in = Mark();
    if (emitted > 0) {  // the input continues from its restored position
      last_in->valid = true;
      last_in->epoch = in_epoch;
      std::copy(in_counters.begin(), in_counters.end(), last_in->counters.begin());
    }
    std::lock_guard<std::mutex> l(mu_);
    emitted_ = emitted;
    return held;
  }

 private:
  struct Snapshot {
    uint64_t emission;
    std::vector<uint64_t> held;
  };
  PipelineContext* const ctx_;
  const size_t slot_;
  const uint64_t tag_;
  mutable std::mutex mu_;  // guards the members below (Save runs on the consumer's thread)
  uint64_t emitted_ = 0;
  std::deque<Snapshot> history_;  // emissions not yet delivered (and the last delivered)
};

}  // namespace sluice::pipeline

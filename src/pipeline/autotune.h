// Autotune: adjusts map parallelism, read concurrency and prefetch depth while the pipeline
// runs, from the stage rates it measures (method: docs/pipeline.md, "Autotune").
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "context.h"

namespace sluice::pipeline {

struct AutotuneOptions {
  uint64_t interval_ns = 50'000'000;  // Default: decide every 50 ms of wall time
  double starving = 0.05;             // Default: consumer waited > 5% of the interval: speed up
  double idle = 0.01;                 // Default: consumer waited < 1% ...
  int idle_intervals = 4;             // ... for 4 intervals in a row: give CPU back
  double busy = 0.7;                  // Default: a stage above 70% busy per task is saturated
};

class Autotuner {
 public:
  Autotuner(PipelineContext* ctx, size_t cpu_budget, AutotuneOptions options = {})
      : ctx_(ctx), cpu_budget_(cpu_budget), options_(options) {}
  // Called by the consumer after each Next with the current time and its total wait time.
  void Tick(uint64_t now_ns, uint64_t consumer_wait_ns) {
    if (now_ns - last_ns_ >= options_.interval_ns) Step(now_ns, consumer_wait_ns);
  }
  uint64_t steps() const { return steps_; }

 private:
  void Step(uint64_t now_ns, uint64_t consumer_wait_ns);
  struct Knob {
    Tunable* t;
    double utilization;  // busy share of its tasks over the interval
  };
  // One decision over the knobs (called under the registry lock).
  void Decide(std::vector<Knob>& knobs, double waited, size_t cpu_used);

  PipelineContext* ctx_;
  size_t cpu_budget_;
  AutotuneOptions options_;
  uint64_t last_ns_ = 0;
  uint64_t last_wait_ns_ = 0;
  int idle_run_ = 0;
  uint64_t steps_ = 0;
  std::map<const StageCounters*, uint64_t> last_busy_;  // busy_ns per stage at the last step
};

}  // namespace sluice::pipeline

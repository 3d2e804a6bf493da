#include "autotune.h"

namespace sluice::pipeline {

void Autotuner::Step(uint64_t now_ns, uint64_t consumer_wait_ns) {
  uint64_t interval = now_ns - last_ns_;
  bool first = last_ns_ == 0;
  double waited =
      static_cast<double>(consumer_wait_ns - last_wait_ns_) / static_cast<double>(interval);
  last_ns_ = now_ns;
  last_wait_ns_ = consumer_wait_ns;

  ctx_->WithTunables([&](const std::vector<Tunable*>& tunables) {
    std::vector<Knob> knobs;
    size_t cpu_used = 0;
    for (Tunable* t : tunables) {
      uint64_t busy = t->counters()->busy_ns.load();
      uint64_t delta = busy - std::min(busy, last_busy_[t->counters()]);
      last_busy_[t->counters()] = busy;
      bool prefetch = t->kind() == Tunable::Kind::kPrefetchDepth;
      double tasks = prefetch ? 1.0 : static_cast<double>(t->value());
      if (!prefetch) cpu_used += t->value();
      knobs.push_back(
          Knob{t, static_cast<double>(delta) / (static_cast<double>(interval) * tasks)});
    }
    if (!first && !knobs.empty()) Decide(knobs, waited, cpu_used);
  });
}

void Autotuner::Decide(std::vector<Knob>& knobs, double waited, size_t cpu_used) {
  MemoryBudget* budget = ctx_->budget();
  auto memory_allows = [&](const Tunable* t) {
    return budget->used() + t->unit_bytes() < budget->limit() / 10 * 9;
  };
  auto is_prefetch = [](const Knob& k) { return k.t->kind() == Tunable::Kind::kPrefetchDepth; };
  auto change = [&](Tunable* t, size_t v) {
    size_t before = t->value();
    t->set_value(v);
    steps_ += t->value() != before;
  };

  if (waited > options_.starving) {  // the consumer starves: find the stage holding it back
    idle_run_ = 0;
    Knob* best = nullptr;
    for (Knob& k : knobs) {
      if (!is_prefetch(k) && (!best || k.utilization > best->utilization)) best = &k;
    }
    if (best && best->utilization > options_.busy && cpu_used < cpu_budget_ &&
        memory_allows(best->t)) {
      change(best->t, best->t->value() + 1);  // saturated: one more task
      return;
    }
    for (Knob& k : knobs) {  // nobody saturated: absorb bursts with a deeper prefetch
      if (is_prefetch(k) && memory_allows(k.t)) change(k.t, k.t->value() + 1);
    }
    return;
  }
  if (budget->used() > budget->limit() / 10 * 9) {  // near the memory budget: back off
    for (Knob& k : knobs) {
      if (is_prefetch(k) && k.t->value() > 1) change(k.t, k.t->value() - 1);
    }
  }
  if (waited < options_.idle && ++idle_run_ >= options_.idle_intervals) {
    idle_run_ = 0;  // well ahead for a while: give a task back from the least busy stage
    Knob* least = nullptr;
    for (Knob& k : knobs) {
      if (is_prefetch(k) || k.t->value() <= 1) continue;
      if (!least || k.utilization < least->utilization) least = &k;
    }
    if (least && least->utilization < options_.busy / 2) {
      change(least->t, least->t->value() - 1);
    }
  }
}

}  // namespace sluice::pipeline

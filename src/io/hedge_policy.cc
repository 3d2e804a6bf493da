// HedgePolicy: running quantile of first-byte latencies and the duplicate budget.
#include "sluice/io/hedge_policy.h"

#include <algorithm>
#include <cmath>

namespace sluice::io {

namespace {
// Recomputing the quantile (nth_element over the window) every few samples keeps its cost
// per request tiny while following shifts in latency within a fraction of the window.
constexpr uint64_t kRecomputeEvery = 16;
}  // namespace

HedgePolicy::HedgePolicy(Options options) : options_(options), tokens_(options.burst) {
  if (options_.window == 0) options_.window = 1;
  samples_.reserve(options_.window);
}

void HedgePolicy::OnRequest() {
  tokens_ = std::min(options_.burst, tokens_ + options_.max_extra_fraction);
}

bool HedgePolicy::TryHedge(bool overdue) {
  if (!options_.enabled) return false;
  const bool borrow = overdue && overdue_multiple() > 0 && tokens_ - 1.0 >= -options_.max_debt;
  if (tokens_ < 1.0 && !borrow) return false;
  tokens_ -= 1.0;
  return true;
}

void HedgePolicy::RecordFirstByte(std::chrono::microseconds latency) {
  const int64_t us = std::max<int64_t>(0, latency.count());
  if (samples_.size() < options_.window) {
    samples_.push_back(us);
  } else {
    samples_[next_] = us;
    next_ = (next_ + 1) % options_.window;
  }
  ++recorded_;
}

double HedgePolicy::Quantile(double q) const {
  if (samples_.empty()) return 0;
  std::vector<int64_t> sorted = samples_;
  const size_t k = std::min(
      sorted.size() - 1,
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - (q > 0 ? 1 : 0));
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  return static_cast<double>(sorted[k]);
}

std::optional<std::chrono::microseconds> HedgePolicy::Delay() {
  if (!options_.enabled) return std::nullopt;
  if (samples_.size() < options_.min_samples) {
    if (samples_.size() < std::max<size_t>(options_.early_samples, 1)) return std::nullopt;
    const auto early = static_cast<int64_t>(options_.early_multiple * Quantile(0.5));
    return std::chrono::microseconds(std::max<int64_t>(early, options_.min_delay.count()));
  }
  if (delay_at_ == 0 || recorded_ - delay_at_ >= kRecomputeEvery) {
    delay_us_ = static_cast<int64_t>(Quantile(options_.quantile));
    delay_at_ = recorded_;
  }
  return std::chrono::microseconds(std::max<int64_t>(delay_us_, options_.min_delay.count()));
}

}  // namespace sluice::io

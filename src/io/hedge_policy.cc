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
  for (Latencies& c : classes_) c.samples.reserve(options_.window);
}

size_t HedgePolicy::SizeClass(std::optional<uint64_t> response_bytes) {
  if (!response_bytes || *response_bytes < (uint64_t{256} << 10)) return 0;
  return *response_bytes < (uint64_t{2} << 20) ? 1 : 2;
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

void HedgePolicy::RecordFirstByte(std::chrono::microseconds latency, size_t size_class) {
  Latencies& c = classes_[std::min(size_class, kSizeClasses - 1)];
  const int64_t us = std::max<int64_t>(0, latency.count());
  if (c.samples.size() < options_.window) {
    c.samples.push_back(us);
  } else {
    c.samples[c.next] = us;
    c.next = (c.next + 1) % options_.window;
  }
  ++c.recorded;
}

double HedgePolicy::Quantile(double q, size_t size_class) const {
  const Latencies& c = classes_[std::min(size_class, kSizeClasses - 1)];
  if (c.samples.empty()) return 0;
  std::vector<int64_t> sorted = c.samples;
  const size_t k = std::min(
      sorted.size() - 1,
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - (q > 0 ? 1 : 0));
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  return static_cast<double>(sorted[k]);
}

size_t HedgePolicy::BusiestClass() const {
  size_t best = 0;
  for (size_t i = 1; i < kSizeClasses; ++i) {
    if (classes_[i].recorded > classes_[best].recorded) best = i;
  }
  return best;
}

std::optional<std::chrono::microseconds> HedgePolicy::Delay(size_t size_class) {
  if (!options_.enabled) return std::nullopt;
  size_class = std::min(size_class, kSizeClasses - 1);
  Latencies& c = classes_[size_class];
  if (c.samples.size() < options_.min_samples) {
    if (c.samples.size() < std::max<size_t>(options_.early_samples, 1)) return std::nullopt;
    const auto early = static_cast<int64_t>(options_.early_multiple * Quantile(0.5, size_class));
    return std::chrono::microseconds(std::max<int64_t>(early, options_.min_delay.count()));
  }
  if (c.delay_at == 0 || c.recorded - c.delay_at >= kRecomputeEvery) {
    c.delay_us = static_cast<int64_t>(Quantile(options_.quantile, size_class));
    c.delay_at = c.recorded;
  }
  return std::chrono::microseconds(std::max<int64_t>(c.delay_us, options_.min_delay.count()));
}

}  // namespace sluice::io

#include "sluice/dist/policies.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::dist {

void DurationStats::Add(double seconds) {
  if (low_.empty() || seconds <= low_.top()) {
    low_.push(seconds);
  } else {
    high_.push(seconds);
  }
  // Keep |low| == |high| or |low| == |high| + 1, so the median sits on top of `low_`.
  if (low_.size() > high_.size() + 1) {
    high_.push(low_.top());
    low_.pop();
  } else if (high_.size() > low_.size()) {
    low_.push(high_.top());
    high_.pop();
  }
}

double DurationStats::median() const {
  if (low_.empty()) return 0;
  if (low_.size() == high_.size()) return (low_.top() + high_.top()) / 2;
  return low_.top();
}

double SpeculationPolicy::StragglerThreshold(const DurationStats& finished, uint64_t total) const {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  if (!options_.enabled || total == 0) return kNever;
  // Spark's TaskSetManager.checkSpeculatableTasks: floor(quantile * tasks), at least 1.
  auto needed = std::max<uint64_t>(
      static_cast<uint64_t>(std::floor(options_.quantile * static_cast<double>(total))), 1);
  if (finished.count() < needed) return kNever;
  return std::max(options_.multiplier * finished.median(), options_.min_runtime);
}

void LocalityPolicy::OnLaunch(bool local, double now) {
  if (local) last_local_launch_ = now;
}

bool LocalityPolicy::MayRunRemote(double now, bool any_local_candidate) const {
  return !any_local_candidate || now >= RemoteAllowedAt();
}

bool RetryPolicy::ShouldRetry(const Status& error, int failures) const {
  if (failures >= options_.max_attempts) return false;
  // Only failures of the environment: corrupt data, bad arguments, a memory budget too small
  // or a cancelled attempt would fail the same way again.
  return error.code() == StatusCode::kIoError;
}

}  // namespace sluice::dist

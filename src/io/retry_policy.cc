// RetryPolicy: which failed attempts are repeated, and the backoff between them.
#include "sluice/io/retry_policy.h"

#include <algorithm>

namespace sluice::io {

std::string RetryPolicy::ErrorCode(long status, std::string_view body) const {
  if (!options_.decode_error_code) return "";
  return options_.decode_error_code(status, body);
}

bool RetryPolicy::IsRetryable(const AttemptFailure& failure) const {
  using Kind = AttemptFailure::Kind;
  switch (failure.kind) {
    case Kind::kConnect:
    case Kind::kReset:
    case Kind::kStall:
    case Kind::kShortBody:
    case Kind::kWrongRange:
      return true;
    case Kind::kUnavailable:
      return false;
    case Kind::kStatus:
      break;
  }
  const auto& statuses = options_.retryable_statuses;
  if (std::find(statuses.begin(), statuses.end(), failure.http_status) != statuses.end()) {
    return true;
  }
  const auto& codes = options_.retryable_error_codes;
  return !failure.error_code.empty() &&
         std::find(codes.begin(), codes.end(), failure.error_code) != codes.end();
}

std::chrono::milliseconds RetryPolicy::Delay(int attempts_made, uint64_t random) const {
  const int64_t base = options_.base_delay.count();
  const int64_t cap = options_.max_delay.count();
  int64_t step = base;
  for (int i = 1; i < attempts_made && step < cap; ++i) step *= 2;
  step = std::min(step, cap);
  if (step <= 0) return std::chrono::milliseconds(0);
  const int64_t half = step / 2;
  const int64_t spread = step - half + 1;  // [half, step] inclusive
  return std::chrono::milliseconds(half +
                                   static_cast<int64_t>(random % static_cast<uint64_t>(spread)));
}

}  // namespace sluice::io

// When a failed HTTP attempt is sent again, and after how long: one object, injected into the
// HTTP engine (and overridable per request), holding the one list of retryable statuses and
// error codes. Pure: no clock, no randomness of its own (the engine passes a random number).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::io {

// What one failed attempt looked like.
struct AttemptFailure {
  enum class Kind {
    kStatus,       // the server answered with an error status (or an error document)
    kConnect,      // could not connect (refused, unreachable, connect timeout)
    kReset,        // the connection broke (reset, closed early, nothing received)
    kStall,        // no byte for the stall timeout, or the attempt's time ran out
    kShortBody,    // a 2xx body shorter or longer than announced or expected
    kWrongRange,   // a 206 whose Content-Range is not the range asked for
    kUnavailable,  // unrecoverable locally: bad URL, unknown host, TLS verification
  };
  Kind kind = Kind::kStatus;
  long http_status = 0;    // kStatus
  std::string error_code;  // kStatus: the service's code ("SlowDown"), may be empty
};

class RetryPolicy {
 public:
  struct Options {
    // Attempts in all, the first included. Default: 6 (five retries; with the delays below a
    // request gives up after about 6 s of backoff, longer than typical S3 503 bursts).
    int max_attempts = 6;
    // Backoff before retry n (n = 1, 2, ...) is drawn uniformly from [d/2, d] with
    // d = min(max_delay, base_delay * 2^(n-1)) ("equal jitter": clients that failed together
    // spread out, yet each waits at least half the exponential step).
    std::chrono::milliseconds base_delay{100};  // Default: 100 ms
    std::chrono::milliseconds max_delay{5000};  // Default: 5 s
    // The statuses worth repeating: request timeout, throttling, server errors.
    std::vector<long> retryable_statuses = {408, 429, 500, 502, 503, 504};
    // Service error codes worth repeating whatever the status (S3 sends RequestTimeout with
    // 400 and InternalError inside a 200 reply to CompleteMultipartUpload).
    std::vector<std::string> retryable_error_codes = {"SlowDown",
                                                      "RequestTimeout",
                                                      "InternalError",
                                                      "Throttling",
                                                      "ThrottlingException",
                                                      "ServiceUnavailable",
                                                      "RequestLimitExceeded"};
    // Reads the service's error code out of an error body ("" when there is none). Default:
    // null = no codes (statuses only).
    std::function<std::string(long status, std::string_view body)> decode_error_code;
  };

  RetryPolicy() : RetryPolicy(Options()) {}
  explicit RetryPolicy(Options options) : options_(std::move(options)) {}

  // The error code in a response body, via Options::decode_error_code.
  std::string ErrorCode(long status, std::string_view body) const;
  // Whether this kind of failure is worth repeating at all.
  bool IsRetryable(const AttemptFailure& failure) const;
  // Whether to send attempt `attempts_made + 1` after `failure`.
  bool ShouldRetry(const AttemptFailure& failure, int attempts_made) const {
    return attempts_made < options_.max_attempts && IsRetryable(failure);
  }
  // How long to wait before attempt `attempts_made + 1`; `random` is any uniform 64-bit value.
  std::chrono::milliseconds Delay(int attempts_made, uint64_t random) const;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace sluice::io

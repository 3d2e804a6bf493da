// One attempt of an HTTP request on a libcurl easy handle: setting the handle up, capturing
// the response, and classifying how the attempt ended. Used only by the engine's thread
// (http_engine.cc), which owns every Transfer. Also the registry of live engines.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/curl_api.h"
#include "sluice/io/http_engine.h"

namespace sluice::io::internal {

using Clock = std::chrono::steady_clock;

struct Transfer;

// Where header callbacks report a transfer's first response byte; the engine reads it after
// curl_multi_perform returns (never acting inside a curl callback).
using FirstByteSink = std::vector<std::pair<uint64_t, Transfer*>>;

struct Transfer {
  CURL* easy = nullptr;
  uint64_t request_id = 0;
  bool is_hedge = false;
  curl_slist* header_list = nullptr;
  HttpResponse response;  // status, headers and body as received so far
  Clock::time_point started;
  bool got_first_byte = false;
  bool overflow = false;  // the body outgrew what was allowed (aborted)
  std::optional<uint64_t> expected_body_bytes;
  std::function<std::string(size_t n)> body_buffer;  // HttpRequest::body_buffer
  uint64_t max_body_bytes = 0;
  FirstByteSink* first_byte_sink = nullptr;
  char error[CURL_ERROR_SIZE] = {};

  ~Transfer();
};

struct TransferLimits {
  std::chrono::milliseconds connect_timeout;
  std::chrono::milliseconds stall_timeout;
  uint64_t max_body_bytes;
};

// Prepares `t->easy` (fresh or reset) to send `attempt`; `body` outlives the transfer.
void SetUpTransfer(const HttpRequest& attempt, const TransferLimits& limits, Transfer* t);

// How an attempt ended: success (nullopt) or a failure with a description for errors.
struct AttemptResult {
  std::optional<AttemptFailure> failure;
  std::string description;  // "HTTP 503 SlowDown", "connection reset (...)", ...
};
AttemptResult ClassifyAttempt(CURLcode code, const Transfer& t, const HttpRequest& request,
                              const RetryPolicy& policy);

// Lower-cases ASCII.
std::string AsciiLower(std::string_view s);

// The registry of live engines (http_engines.cc), for ProcessHttpStats: an engine joins it
// when constructed and leaves it before it is destroyed.
void RegisterEngine(const HttpEngine* engine);
void UnregisterEngine(const HttpEngine* engine);

}  // namespace sluice::io::internal

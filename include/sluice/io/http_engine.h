// The asynchronous HTTP engine under the remote file systems (S3, WebHDFS): one thread owns a
// libcurl multi handle and keeps up to `max_in_flight` transfers running (connections are
// reused); other threads queue requests and get a callback. Retries, hedged duplicates,
// deadlines and cancellation all happen on that thread with timers, never by sleeping.
// docs/storage.md describes the behaviour users see.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"
#include "sluice/io/hedge_policy.h"
#include "sluice/io/retry_policy.h"

namespace sluice::io {

// Header names as sent; lookups (HttpResponse::Header) ignore case.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;
// The value of the first header called `name` (any case), nullptr if absent.
const std::string* FindHeader(const HttpHeaders& headers, std::string_view name);

struct HttpRequest;

// Adds authentication headers to one attempt of a request (S3: SigV4). Called on the engine
// thread before every attempt, with the wall clock of that attempt, so a retry an hour later
// carries a fresh signature. Must be fast and must not block.
class RequestSigner {
 public:
  virtual ~RequestSigner() = default;
  virtual void Sign(std::chrono::system_clock::time_point now, HttpRequest* attempt) const = 0;
};

// One HTTP request: a plain value. The engine copies nothing it does not need to (the body is
// shared by retries and hedged duplicates).
struct HttpRequest {
  std::string method = "GET";
  std::string url;  // fully percent-encoded; sent as is (no path normalisation)
  HttpHeaders headers;
  std::shared_ptr<const std::string> body;  // Default: null = no body
  // Length the response body must have when the status is 2xx (a ranged GET knows it): a
  // shorter or longer body fails the attempt (retried) and is never handed on.
  // Default: unset = whatever Content-Length says (curl checks that one).
  std::optional<uint64_t> expected_body_bytes;
  // With expected_body_bytes: where a 2xx body goes, a buffer for that many bytes asked for
  // at its first byte (each attempt and duplicate asks; it may be longer: its capacity is
  // kept, so a reused buffer costs no fresh pages). Default: empty = a new string.
  std::function<std::string(size_t n)> body_buffer;
  // The range a ranged GET asked for (its Range header): a 206 reply whose Content-Range does
  // not name exactly these bytes fails the attempt as a transport fault (retried like a reset;
  // a proxy or cache that answers another range is never handed on). Default: unset.
  std::optional<ByteRange> expected_range;
  // Whether a failed attempt may be sent again (false for requests that are not idempotent).
  bool retry = true;  // Default: true
  // Whether a duplicate may be sent when the first byte is late (HedgePolicy). Only for reads
  // without side effects. Default: false.
  bool hedge = false;
  // A 2xx status whose body may still be an error document (S3's CompleteMultipartUpload and
  // CopyObject): the retry policy's error decoder then looks at 2xx bodies too.
  bool ok_body_may_be_error = false;
  // Follow 3xx redirects (WebHDFS OPEN/CREATE go to a datanode). Default: false.
  bool follow_redirects = false;
  // Time for all attempts together; past it the request fails with IoError naming the URL.
  // Default: zero = HttpEngineOptions::request_timeout.
  std::chrono::milliseconds timeout{0};
  // Default: null = not cancellable except through HttpEngine::Cancel.
  std::shared_ptr<const CancelToken> cancel;
  // Default: null = sent unsigned.
  std::shared_ptr<const RequestSigner> signer;
  // Default: null = HttpEngineOptions::retry.
  std::shared_ptr<const RetryPolicy> retry_policy;
  // Names the request in errors instead of the URL when set (e.g. "s3://bucket/key").
  std::string label;
};

struct HttpResponse {
  long status = 0;
  HttpHeaders headers;  // names lower-cased, values trimmed; of the final response
  std::string body;
  int attempts = 0;     // attempts made, hedged duplicates not counted
  bool hedged = false;  // a duplicate was sent for the attempt that answered
  // Value of a header (name in any case), nullptr if absent.
  const std::string* Header(std::string_view name) const;
};

// Receives a response of any status once retries are over (the caller decodes error
// statuses), or an error Status: transport failure after the retries (IoError naming method,
// URL, cause and attempts), deadline (IoError), cancellation (Cancelled).
// Runs on the engine thread: it must be quick and must never wait for another request.
using HttpCallback = std::function<void(Result<HttpResponse>)>;

struct HttpEngineOptions {
  // Transfers running at once (hedged duplicates come on top, at most HedgePolicy's budget).
  // Default: 64 (enough to keep a 10 Gbit/s link busy with 8 MiB ranges at ~50 ms first-byte
  // latency: 64 x 8 MiB / (50 ms + 8 MiB / 100 MB/s) ~ 4 GB/s).
  size_t max_in_flight = 64;
  std::chrono::milliseconds connect_timeout{10000};  // Default: 10 s
  // An attempt that receives no byte for this long fails (and is retried). Default: 30 s.
  std::chrono::milliseconds stall_timeout{30000};
  // Default deadline of a request over all its attempts. Default: 5 minutes.
  std::chrono::milliseconds request_timeout{300000};
  // Default: null = RetryPolicy with its default options.
  std::shared_ptr<const RetryPolicy> retry;
  HedgePolicy::Options hedge;
  // Largest body accepted for a response whose length is not known in advance. Default: 1 GiB.
  uint64_t max_body_bytes = uint64_t{1} << 30;
  uint64_t seed = 0;  // jitter of retry delays; Default: 0 = from the clock
};

// Counters since the engine started, and gauges (now). Safe to read from any thread.
struct HttpEngineStats {
  uint64_t in_flight = 0;       // transfers running now (gauge)
  uint64_t queued = 0;          // requests waiting for a slot or a retry timer (gauge)
  uint64_t requests = 0;        // requests finished (any outcome)
  uint64_t failed = 0;          // of which failed (transport error, deadline, cancelled)
  uint64_t attempts = 0;        // transfers started, hedges included
  uint64_t retries = 0;         // attempts that repeated a failed one
  uint64_t hedges = 0;          // duplicates sent for a late first byte
  uint64_t hedges_won = 0;      // duplicates that answered first
  uint64_t bytes_received = 0;  // response bodies
  uint64_t bytes_sent = 0;      // request bodies
  // Over recent hedgeable requests of the busiest size class (0 until measured).
  double first_byte_p50_ms = 0;
  double first_byte_p95_ms = 0;
};

class HttpEngine {
 public:
  using RequestId = uint64_t;

  explicit HttpEngine(HttpEngineOptions options = {});
  // Cancels every pending request (their callbacks run with Cancelled) and joins the thread.
  ~HttpEngine();
  HttpEngine(const HttpEngine&) = delete;
  HttpEngine& operator=(const HttpEngine&) = delete;

  // Queues a request; `done` runs exactly once on the engine thread, never inside Submit.
  // Threading: any thread.
  RequestId Submit(HttpRequest request, HttpCallback done);
  // Stops a request: its transfers are removed and its callback runs with Cancelled (unless
  // it already finished). Threading: any thread except inside an HttpCallback's caller chain
  // is fine too; the removal itself always happens on the engine thread.
  void Cancel(RequestId id);
  // Submits and waits. Must not be called from an HttpCallback.
  Result<HttpResponse> Call(HttpRequest request);

  HttpEngineStats stats() const;
  const HttpEngineOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The process-wide engine shared by S3 and WebHDFS, with options from the environment when
// set: SLUICE_HTTP_MAX_IN_FLIGHT (requests), SLUICE_HTTP_STALL_TIMEOUT, SLUICE_HTTP_TIMEOUT
// (a request's deadline), SLUICE_HTTP_CONNECT_TIMEOUT (seconds). Created on first use, never
// destroyed; a forked child gets its own on first use (the parent's thread does not exist
// there).
HttpEngine* DefaultHttpEngine();

// Stats of every engine created in this process, summed (what the stall report shows).
HttpEngineStats ProcessHttpStats();
// Counters of `now` minus those of `before`; gauges (in flight, queued, first-byte
// quantiles) as in `now`. What happened during a run: Since(ProcessHttpStats(), at_start).
HttpEngineStats Since(const HttpEngineStats& now, const HttpEngineStats& before);
// One line for the stall report, "" when no request was made:
// "network: 12 requests in flight (3 queued), 412 requests, 340.5 MB/s in, 2 retries,
// 5 hedges (4 won), first byte p50 3.1 ms p95 40.2 ms".
std::string DescribeHttpStats(const HttpEngineStats& delta, double seconds);

}  // namespace sluice::io

// One attempt on a libcurl easy handle: options, response capture, outcome.
#include "io/http_transfer.h"

#include <algorithm>

#include "io/http_parse.h"

namespace sluice::io::internal {

namespace {

// Error bodies (S3's XML documents) are small; anything longer is cut (the code and message
// come first).
constexpr uint64_t kMaxErrorBodyBytes = 64 * 1024;

bool IsSuccess(long status) { return status >= 200 && status < 300; }

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (!t->got_first_byte) {
    t->got_first_byte = true;
    if (t->first_byte_sink != nullptr) t->first_byte_sink->emplace_back(t->request_id, t);
  }
  ApplyHeaderLine(std::string_view(data, n), &t->response);
  return n;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string& body = t->response.body;
  const bool ok = IsSuccess(t->response.status);
  const uint64_t limit = !ok                                  ? kMaxErrorBodyBytes
                         : t->expected_body_bytes.has_value() ? *t->expected_body_bytes
                                                              : t->max_body_bytes;
  if (body.size() + n > limit) {
    if (!ok) {  // keep the head of an error document, drop the rest quietly
      body.append(data, limit > body.size() ? limit - body.size() : 0);
      return n;
    }
    t->overflow = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  if (body.empty() && ok && t->expected_body_bytes.has_value()) {
    if (t->body_buffer) {
      body = t->body_buffer(*t->expected_body_bytes);
      body.clear();  // keeps its capacity, and its pages
    }
    body.reserve(*t->expected_body_bytes);
  }
  body.append(data, n);
  return n;
}

// The description of a transport failure and whether repeating it can help.
AttemptFailure::Kind KindOf(CURLcode code) {
  using Kind = AttemptFailure::Kind;
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      return Kind::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return Kind::kStall;
    case CURLE_PARTIAL_FILE:
      return Kind::kShortBody;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_WEIRD_SERVER_REPLY:
      return Kind::kReset;
    default:
      return Kind::kUnavailable;
  }
}

AttemptFailure FailureOf(AttemptFailure::Kind kind) {
  AttemptFailure f;
  f.kind = kind;
  return f;
}

std::string Plural(uint64_t n, const char* unit) {
  return std::to_string(n) + " " + unit + (n == 1 ? "" : "s");
}

// Why a 206 reply is not the range asked for ("" when it is).
std::string WrongRange(const HttpResponse& response, const ByteRange& asked) {
  const std::string want = "bytes " + std::to_string(asked.offset) + "-" +
                           std::to_string(asked.offset + asked.length - 1);
  const std::string* header = response.Header("content-range");
  ContentRange got;
  if (header != nullptr && ParseContentRange(*header, &got) && got.first == asked.offset &&
      got.last + 1 == asked.end()) {
    return "";
  }
  return "asked for " + want + ", server sent " +
         (header == nullptr ? std::string("no Content-Range") : "Content-Range: " + *header);
}

}  // namespace

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Transfer::~Transfer() {
  if (header_list != nullptr) Curl().slist_free_all(header_list);
}

void SetUpTransfer(const HttpRequest& attempt, const TransferLimits& limits, Transfer* t) {
  const CurlApi& curl = Curl();
  CURL* e = t->easy;
  curl.easy_setopt(e, CURLOPT_URL, attempt.url.c_str());
  curl.easy_setopt(e, CURLOPT_PRIVATE, t);
  curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl.easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);  // object keys may hold "/../"
  curl.easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl.easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl.easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout.count()));
  // A transfer moving less than one byte per second for the stall time fails (whole seconds).
  const long stall_seconds =
      std::max<long>(1, static_cast<long>((limits.stall_timeout.count() + 999) / 1000));
  curl.easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl.easy_setopt(e, CURLOPT_LOW_SPEED_TIME, stall_seconds);
  curl.easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  curl.easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl.easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
  curl.easy_setopt(e, CURLOPT_WRITEDATA, t);
  if (attempt.follow_redirects) {
    curl.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl.easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
  }

  const std::string& method = attempt.method;
  bool has_content_type = false;
  for (const auto& [name, value] : attempt.headers) {
    if (AsciiLower(name) == "content-type") has_content_type = true;
    std::string line = name + (value.empty() ? ";" : ": " + value);  // "X;" sends "X:" empty
    t->header_list = curl.slist_append(t->header_list, line.c_str());
  }
  // No "Expect: 100-continue" round trip before bodies; no form content type curl would add.
  t->header_list = curl.slist_append(t->header_list, "Expect:");
  if (method == "HEAD") {
    curl.easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (method == "GET" && attempt.body == nullptr) {
    curl.easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (attempt.body != nullptr || method == "PUT" || method == "POST") {
      static const std::string kEmpty;
      const std::string& body = attempt.body != nullptr ? *attempt.body : kEmpty;
      curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl.easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
      if (!has_content_type) t->header_list = curl.slist_append(t->header_list, "Content-Type:");
    }
  }
  curl.easy_setopt(e, CURLOPT_HTTPHEADER, t->header_list);
  // libcurl silently sends a request again when a reused connection turns out dead before
  // the first reply byte, though the server may have acted on it: a request that must not be
  // repeated (a WebHDFS APPEND) gets a connection of its own.
  if (!attempt.retry) curl.easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
  t->expected_body_bytes = attempt.expected_body_bytes;
  t->body_buffer = attempt.body_buffer;
  t->max_body_bytes = limits.max_body_bytes;
}

AttemptResult ClassifyAttempt(CURLcode code, const Transfer& t, const HttpRequest& request,
                              const RetryPolicy& policy) {
  AttemptResult r;
  const HttpResponse& response = t.response;
  if (code == CURLE_WRITE_ERROR && t.overflow) {
    r.failure = FailureOf(AttemptFailure::Kind::kShortBody);
    r.description =
        t.expected_body_bytes.has_value()
            ? "body longer than the " + Plural(*t.expected_body_bytes, "byte") + " asked for"
            : "body longer than " + Plural(t.max_body_bytes, "byte");
    return r;
  }
  if (code != CURLE_OK) {
    r.failure = FailureOf(KindOf(code));
    std::string detail = t.error[0] != '\0' ? t.error : Curl().easy_strerror(code);
    r.description = detail + " (curl error " + std::to_string(static_cast<int>(code)) + ")";
    return r;
  }
  const long status = response.status;
  if (IsSuccess(status)) {
    if (t.expected_body_bytes.has_value() && response.body.size() != *t.expected_body_bytes) {
      r.failure = FailureOf(AttemptFailure::Kind::kShortBody);
      r.description = "body of " + Plural(response.body.size(), "byte") + ", expected " +
                      std::to_string(*t.expected_body_bytes);
      return r;
    }
    if (status == 206 && request.expected_range.has_value()) {
      std::string wrong = WrongRange(response, *request.expected_range);
      if (!wrong.empty()) {
        r.failure = FailureOf(AttemptFailure::Kind::kWrongRange);
        r.description = std::move(wrong);
        return r;
      }
    }
    if (!request.ok_body_may_be_error) return r;
  }
  std::string error_code = policy.ErrorCode(status, response.body);
  if (IsSuccess(status) && error_code.empty()) return r;
  r.description = "HTTP " + std::to_string(status) + (error_code.empty() ? "" : " " + error_code);
  r.failure = FailureOf(AttemptFailure::Kind::kStatus);
  r.failure->http_status = status;
  r.failure->error_code = std::move(error_code);
  return r;
}

}  // namespace sluice::io::internal

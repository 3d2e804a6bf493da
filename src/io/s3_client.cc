// S3Client: addressing, signing and error decoding of S3 requests.
#include "io/s3_client.h"

#include <future>

#include "io/crypto_api.h"
#include "io/s3_errors.h"
#include "io/s3_xml.h"
#include "io/sigv4.h"

namespace sluice::io {

namespace {

// Signs each attempt (SigV4, header form). The URL was built with an encoded path and a
// canonical query (CanonicalQuery), so both are taken from it as they are.
class S3Signer final : public RequestSigner {
 public:
  S3Signer(AwsCredentials credentials, std::string region)
      : credentials_(std::move(credentials)), region_(std::move(region)) {}

  void Sign(std::chrono::system_clock::time_point now, HttpRequest* attempt) const override {
    std::string_view url = attempt->url;
    size_t start = url.find("://");
    size_t slash = url.find('/', start == std::string_view::npos ? 0 : start + 3);
    std::string_view target = slash == std::string_view::npos ? "/" : url.substr(slash);
    size_t q = target.find('?');
    SigV4Request request;
    request.method = attempt->method;
    request.canonical_uri = target.substr(0, q);
    request.canonical_query = q == std::string_view::npos ? "" : target.substr(q + 1);
    request.headers = attempt->headers;
    request.payload_hash = kEmptySha256;
    for (const auto& [name, value] : attempt->headers) {
      if (name == "x-amz-content-sha256") request.payload_hash = value;
    }
    SigV4Signature sig = SignV4(request, credentials_, region_, "s3", now);
    for (auto& h : sig.headers) attempt->headers.push_back(std::move(h));
  }

 private:
  AwsCredentials credentials_;
  std::string region_;
};

// Bucket names: 3-63 characters of lower-case letters, digits, '.', '-' (and '_' in legacy
// buckets, which S3-compatible servers still accept).
bool ValidBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
          (c >= 'A' && c <= 'Z'))) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<S3Path> ParseS3Path(std::string_view uri) {
  if (!uri.starts_with("s3://")) return InvalidArgument(RedactUrl(uri) + ": not an s3:// URI");
  std::string_view rest = uri.substr(5);
  size_t slash = rest.find('/');
  S3Path p;
  p.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) p.key = std::string(rest.substr(slash + 1));
  if (!ValidBucket(p.bucket)) {
    // The URI is redacted, not the bucket quoted: "s3://key:secret@bucket" must not echo.
    return InvalidArgument(RedactUrl(uri) +
                           ": not a valid bucket name (3-63 characters of "
                           "a-z, 0-9, '.', '-' and '_')");
  }
  return p;
}

Result<std::shared_ptr<S3Client>> S3Client::Make(S3Options options) {
  SLUICE_RETURN_IF_ERROR(internal::LoadCrypto().status());  // signing needs it: fail here
  std::string url = options.aws.endpoint_url;
  if (url.empty()) url = "https://s3." + options.aws.region + ".amazonaws.com";
  SLUICE_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(url));
  return std::shared_ptr<S3Client>(new S3Client(std::move(options), std::move(endpoint)));
}

S3Client::S3Client(S3Options options, Endpoint endpoint)
    : options_(std::move(options)), endpoint_(std::move(endpoint)) {
  engine_ = options_.engine != nullptr ? options_.engine : DefaultHttpEngine();
  if (options_.retry != nullptr) {
    retry_ = options_.retry;
  } else {
    RetryPolicy::Options retry;
    if (options_.aws.max_attempts > 0) retry.max_attempts = options_.aws.max_attempts;
    retry_ = S3RetryPolicy(retry);
  }
  if (options_.aws.anonymous) return;
  if (!options_.aws.credentials.has_value()) {
    ready_ = FailedPrecondition(
        "no AWS credentials found (looked in " + options_.aws.credentials_source +
        "): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or "
        "AWS_NO_SIGN_REQUEST=YES for a public bucket");
    return;
  }
  signer_ = std::make_shared<S3Signer>(*options_.aws.credentials, options_.aws.region);
}

bool S3Client::VirtualHosted(const std::string& bucket) const {
  switch (options_.aws.addressing) {
    case S3Addressing::kPath:
      return false;
    case S3Addressing::kVirtualHosted:
      return true;
    case S3Addressing::kAuto:
      break;
  }
  // Auto: AWS's own endpoints take bucket names in the host when the name is a valid DNS
  // label (no dots under TLS: the wildcard certificate covers one level); S3-compatible
  // servers (an endpoint_url) get path style, which they all support.
  if (!options_.aws.endpoint_url.empty() || IsIpAddress(endpoint_.host)) return false;
  for (char c : bucket) {
    if (c == '_' || (c >= 'A' && c <= 'Z') || (c == '.' && endpoint_.scheme == "https"))
      return false;
  }
  return true;
}

void S3Client::Address(const S3Path& path, std::string* authority,
                       std::string* encoded_path) const {
  const std::string key = UriEncode(path.key, /*keep_slash=*/true);
  if (VirtualHosted(path.bucket)) {
    Endpoint e = endpoint_;
    e.host = path.bucket + "." + e.host;
    *authority = e.Authority();
    *encoded_path = endpoint_.base_path + "/" + key;
  } else {
    *authority = endpoint_.Authority();
    *encoded_path = endpoint_.base_path + "/" + UriEncode(path.bucket, false) +
                    (path.key.empty() ? "" : "/" + key);
  }
}

std::string S3Client::UrlOf(const S3Call& call) const {
  std::string authority, encoded_path;
  Address(call.path, &authority, &encoded_path);
  const std::string query = CanonicalQuery(call.query);
  return endpoint_.scheme + "://" + authority + encoded_path + (query.empty() ? "" : "?" + query);
}

HttpRequest S3Client::Build(const S3Call& call) const {
  HttpRequest r;
  std::string authority, encoded_path;
  Address(call.path, &authority, &encoded_path);
  r.method = call.method;
  r.url = UrlOf(call);
  r.headers.emplace_back("host", authority);
  r.headers.emplace_back("x-amz-content-sha256",
                         call.body != nullptr ? Sha256Hex(*call.body) : kEmptySha256);
  for (const auto& h : call.headers) r.headers.push_back(h);
  r.body = call.body;
  r.expected_body_bytes = call.expected_body_bytes;
  r.body_buffer = call.body_buffer;
  r.expected_range = call.expected_range;
  r.hedge = call.hedge && options_.hedge_reads;
  r.ok_body_may_be_error = call.ok_body_may_be_error;
  r.timeout = options_.request_timeout;
  r.cancel = call.cancel;
  r.signer = signer_;
  r.retry_policy = retry_;
  r.label = call.Label();
  return r;
}

HttpEngine::RequestId S3Client::Send(const S3Call& call, HttpCallback done) {
  return engine_->Submit(Build(call), std::move(done));
}

Result<HttpResponse> S3Client::Run(const S3Call& call) {
  if (!ready_.ok()) return ready_.WithContext(call.Label());
  SLUICE_ASSIGN_OR_RETURN(HttpResponse response, engine_->Call(Build(call)));
  if (response.status < 200 || response.status >= 300) {
    if (call.method == "HEAD" && (response.status == 400 || response.status == 403)) {
      return ExplainRefusedHead(call, response);
    }
    return ErrorOf(call, response);
  }
  return response;
}

Status S3Client::ExplainRefusedHead(const S3Call& head, const HttpResponse& response) {
  // A HEAD reply has no body, so "403 Forbidden" could be a wrong secret, an unknown access
  // key or a missing permission. The same request as a GET (of one byte, or an empty
  // listing for a bucket) carries S3's error code; only this failure path pays for it.
  S3Call get;
  get.path = head.path;
  get.label = head.label;
  get.cancel = head.cancel;
  if (head.path.key.empty()) {
    get.query = {{"list-type", "2"}, {"max-keys", "0"}};
  } else {
    get.headers = {{"range", "bytes=0-0"}};
  }
  auto again = engine_->Call(Build(get));
  if (again.ok() && (again->status == 400 || again->status == 403) &&
      ParseS3ErrorDocument(again->body).has_value()) {
    return ErrorOf(get, *again);
  }
  return ErrorOf(head, response);
}

Status S3Client::ErrorOf(const S3Call& call, const HttpResponse& response) const {
  return S3ErrorStatus(call.Label(), call.method, UrlOf(call), response);
}

std::shared_ptr<const RetryPolicy> S3RetryPolicy(RetryPolicy::Options options) {
  options.decode_error_code = &S3ErrorCode;
  // Concurrent conditional writes to one key: S3 asks to repeat the request (which then
  // meets the winner's object and gets 412).
  options.retryable_error_codes.push_back("ConditionalRequestConflict");
  return std::make_shared<const RetryPolicy>(std::move(options));
}

}  // namespace sluice::io

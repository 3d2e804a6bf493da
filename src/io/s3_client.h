// The S3 request layer under the S3 file system: builds addressed, signed HttpRequests for
// S3 operations, runs them on the HTTP engine, and turns error replies into Status values.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/url.h"
#include "sluice/io/http_engine.h"
#include "sluice/io/s3_file_system.h"

namespace sluice::io {

// "s3://bucket/key" split; the key may be empty (the bucket itself).
struct S3Path {
  std::string bucket;
  std::string key;
  std::string Uri() const { return "s3://" + bucket + (key.empty() ? "" : "/" + key); }
};
// InvalidArgument unless `uri` is s3://bucket[/key] with a valid bucket name.
Result<S3Path> ParseS3Path(std::string_view uri);

// One S3 operation.
struct S3Call {
  std::string method = "GET";
  S3Path path;
  QueryParams query;
  HttpHeaders headers;  // signed with the rest (Range, If-None-Match, x-amz-copy-source, ...)
  std::shared_ptr<const std::string> body;
  std::optional<uint64_t> expected_body_bytes;
  std::function<std::string(size_t n)> body_buffer;  // HttpRequest::body_buffer
  std::optional<ByteRange> expected_range;           // HttpRequest::expected_range
  bool hedge = false;
  bool ok_body_may_be_error = false;
  std::shared_ptr<const CancelToken> cancel;
  // What errors and logs name. Default: empty = path.Uri() (a listing names its prefix).
  std::string label;
  std::string Label() const { return label.empty() ? path.Uri() : label; }
};

class S3Client {
 public:
  static Result<std::shared_ptr<S3Client>> Make(S3Options options);

  // The request for `call`: URL by the addressing style, Host, payload hash, signer.
  HttpRequest Build(const S3Call& call) const;
  // FailedPrecondition when requests cannot be signed (no credentials found), else OK.
  const Status& ready() const { return ready_; }
  // Queues `call`; `done` runs on the engine thread. Requires ready().
  HttpEngine::RequestId Send(const S3Call& call, HttpCallback done);
  // Runs `call` and waits: a 2xx reply, or the error as a Status (transport errors and
  // error statuses alike).
  Result<HttpResponse> Run(const S3Call& call);
  // The URL of `call` (for messages).
  std::string UrlOf(const S3Call& call) const;
  // The error Status of a non-2xx reply to `call`.
  Status ErrorOf(const S3Call& call, const HttpResponse& response) const;

  HttpEngine* engine() const { return engine_; }
  const S3Options& options() const { return options_; }

 private:
  S3Client(S3Options options, Endpoint endpoint);
  bool VirtualHosted(const std::string& bucket) const;
  // Scheme, authority and encoded path of `path`.
  void Address(const S3Path& path, std::string* authority, std::string* encoded_path) const;
  // The error of a HEAD refused with 400/403, with S3's error code learnt from a GET.
  Status ExplainRefusedHead(const S3Call& head, const HttpResponse& response);

  S3Options options_;
  Endpoint endpoint_;
  HttpEngine* engine_;
  std::shared_ptr<const RetryPolicy> retry_;
  std::shared_ptr<const RequestSigner> signer_;  // null: anonymous
  Status ready_;
};

}  // namespace sluice::io

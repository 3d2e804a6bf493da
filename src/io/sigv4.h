// AWS Signature Version 4, header form (docs.aws.amazon.com/IAM/latest/UserGuide/
// reference_sigv-create-signed-request.html): a pure function of the request, the credentials
// and the clock, so tests check AWS's published examples byte for byte. The sorted header list
// is built once; the signed-header names and the canonical headers both come from it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "sluice/base/bytes.h"
#include "sluice/io/aws_config.h"
#include "sluice/io/http_engine.h"

namespace sluice::io {

// What the signature covers. Paths and queries are given in their encoded (wire) form.
struct SigV4Request {
  std::string_view method;
  std::string_view canonical_uri;    // "/bucket/my%20key" (S3: each key byte encoded once)
  std::string_view canonical_query;  // CanonicalQuery() output, "" for none
  HttpHeaders headers;               // every header to sign, "host" included
  std::string_view payload_hash;     // hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
};

struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;      // hex
  std::string authorization;  // the Authorization header's value
  // Headers to add to the request: x-amz-date, x-amz-security-token (with a session token),
  // and Authorization.
  HttpHeaders headers;
};

// Signs `request` as of `now` for `region`/`service` ("s3"). x-amz-date (and the session
// token, if any) are added to the signed headers; pass them in `request.headers` yourself
// only if they must carry other values (tests).
SigV4Signature SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                      std::string_view region, std::string_view service,
                      std::chrono::system_clock::time_point now);

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(ByteView data);
// The hash of an empty payload, hex.
extern const char kEmptySha256[];
// "20150830T123600Z"
std::string AmzDate(std::chrono::system_clock::time_point t);

}  // namespace sluice::io

// S3 error replies as Status values: the message names the object, the request (method and
// URL, which never carry credentials: sluice signs headers, not query strings), the HTTP
// status, S3's error code and message, and the attempts made.
#pragma once

#include <string>
#include <string_view>

#include "sluice/base/status.h"
#include "sluice/io/http_engine.h"

namespace sluice::io {

// S3's error code in a reply ("SlowDown"), "" when there is none; a bodiless reply (HEAD)
// gets a code from its status ("NotFound", "Forbidden").
std::string S3ErrorCode(long status, std::string_view body);

// "s3://b/k: GET http://host/b/k: HTTP 404 NoSuchKey (The specified key does not exist.)
// after 1 attempt". The code follows the status: 404 NotFound, 403/401 IoError (permission),
// 412 FailedPrecondition, 400 InvalidArgument, 416 OutOfRange, 301/307 InvalidArgument
// (another region or endpoint: the message says which region when S3 tells), else IoError.
Status S3ErrorStatus(std::string_view what, std::string_view method, std::string_view url,
                     const HttpResponse& response);

}  // namespace sluice::io

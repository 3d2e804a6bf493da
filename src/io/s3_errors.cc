// S3 error replies -> Status.
#include "io/s3_errors.h"

#include "io/s3_xml.h"
#include "io/url.h"

namespace sluice::io {

namespace {

std::string CodeOfStatus(long status) {
  switch (status) {
    case 301:
      return "PermanentRedirect";
    case 307:
      return "TemporaryRedirect";
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 412:
      return "PreconditionFailed";
    case 416:
      return "InvalidRange";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    default:
      return "";
  }
}

}  // namespace

std::string S3ErrorCode(long status, std::string_view body) {
  if (auto doc = ParseS3ErrorDocument(body)) return doc->code;
  if (status >= 200 && status < 300) return "";
  return CodeOfStatus(status);
}

Status S3ErrorStatus(std::string_view what, std::string_view method, std::string_view url,
                     const HttpResponse& response) {
  const long status = response.status;
  auto doc = ParseS3ErrorDocument(response.body);
  std::string code = doc ? doc->code : CodeOfStatus(status);
  std::string message = std::string(what) + ": " + std::string(method) + " " + RedactUrl(url) +
                        ": HTTP " + std::to_string(status);
  if (!code.empty()) message += " " + code;
  if (doc && !doc->message.empty()) message += " (" + doc->message + ")";
  message += " after " + std::to_string(response.attempts) +
             (response.attempts == 1 ? " attempt" : " attempts");
  if (status == 301 || status == 307) {
    const std::string* region = response.Header("x-amz-bucket-region");
    std::string where = region != nullptr ? *region : (doc ? doc->region : "");
    if (!where.empty()) message += "; the bucket is in region " + where + " (set AWS_REGION)";
    return InvalidArgument(std::move(message));
  }
  if (doc && !doc->request_id.empty()) message += " [request id " + doc->request_id + "]";
  switch (status) {
    case 404:
      return NotFound(std::move(message));
    case 400:
      return InvalidArgument(std::move(message));
    case 412:
      return FailedPrecondition(std::move(message));
    case 416:
      return OutOfRange(std::move(message));
    default:
      return IoError(std::move(message));
  }
}

}  // namespace sluice::io

// WebHDFS error replies (webhdfs_errors.h).
#include "io/webhdfs_errors.h"

#include <optional>

#include "io/webhdfs_json.h"

namespace sluice::io::webhdfs {

namespace {

StatusCode CodeFor(std::string_view exception, long http_status) {
  struct Mapping {
    std::string_view exception;
    StatusCode code;
  };
  static constexpr Mapping kByClass[] = {
      {"FileNotFoundException", StatusCode::kNotFound},
      {"FileAlreadyExistsException", StatusCode::kAlreadyExists},
      {"PathIsNotEmptyDirectoryException", StatusCode::kFailedPrecondition},
      {"ParentNotDirectoryException", StatusCode::kFailedPrecondition},
      {"PathIsNotDirectoryException", StatusCode::kFailedPrecondition},
      {"IllegalArgumentException", StatusCode::kInvalidArgument},
      {"InvalidPathException", StatusCode::kInvalidArgument},
      {"UnsupportedOperationException", StatusCode::kUnimplemented},
  };
  for (const Mapping& m : kByClass) {
    if (m.exception == exception) return m.code;
  }
  if (exception.empty() && http_status == 404) return StatusCode::kNotFound;
  if (exception.empty() && http_status == 400) return StatusCode::kInvalidArgument;
  return StatusCode::kIoError;  // AccessControlException, SecurityException, 5xx, ...
}

// At most 200 printable characters of a body that is not a RemoteException.
std::string Summary(std::string_view body) {
  std::string out;
  for (char c : body.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? c : ' ';
  if (body.size() > 200) out += "...";
  return out;
}

}  // namespace

Status ReplyError(std::string_view op, std::string_view uri, long http_status,
                  std::string_view body) {
  std::string message = "WebHDFS " + std::string(op) + " " + std::string(uri) + ": HTTP " +
                        std::to_string(http_status);
  std::optional<RemoteException> remote = ParseRemoteException(body);
  if (remote.has_value()) {
    message += " " + remote->exception + ": " + remote->message;
  } else if (!body.empty()) {
    message += " (" + Summary(body) + ")";
  }
  return Status(CodeFor(remote.has_value() ? remote->exception : "", http_status), message);
}

std::string ErrorCode(long, std::string_view body) {
  std::optional<RemoteException> remote = ParseRemoteException(body);
  return remote.has_value() ? remote->exception : std::string();
}

const std::vector<std::string>& RetryableExceptions() {
  static const std::vector<std::string> kRetryable = {"RetriableException", "StandbyException"};
  return kRetryable;
}

}  // namespace sluice::io::webhdfs

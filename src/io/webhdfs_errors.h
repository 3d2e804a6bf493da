// WebHDFS error replies -> Status (hadoop-hdfs WebHDFS.md, "Error Responses"): a failed
// request answers an HTTP status and a RemoteException JSON naming the Java exception. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::io::webhdfs {

// The Status of a failed reply, naming the operation, the hdfs:// URI, the HTTP status and
// the exception: "WebHDFS OPEN hdfs://nn:9870/a: HTTP 404 FileNotFoundException: File does
// not exist: /a". The code follows the exception class (FileNotFoundException -> NotFound,
// FileAlreadyExistsException -> AlreadyExists, ...), else the HTTP status. Credentials never
// appear: the REST URL's query is not quoted, and a body without a RemoteException is
// summarised, not copied whole.
Status ReplyError(std::string_view op, std::string_view uri, long http_status,
                  std::string_view body);

// The exception class of an error body ("StandbyException"), "" when there is none: the
// error code the HTTP engine's retry policy matches.
std::string ErrorCode(long http_status, std::string_view body);

// Exception classes worth retrying whatever their status: the NameNode asks for it
// (RetriableException, e.g. in safe mode just after start) or is not the active one of an HA
// pair (StandbyException; a retry may reach the active one through a proxy or router).
const std::vector<std::string>& RetryableExceptions();

}  // namespace sluice::io::webhdfs

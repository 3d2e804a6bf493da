// Fuzzes the WebHDFS client's pure protocol code on arbitrary bytes: the JSON reply parsers,
// error replies -> Status, and hdfs:// URI parsing. None may crash; and
//   - a parsed FileStatus of a directory has length 0;
//   - a URI that parses prints (ToString) to a URI that parses to the same thing, and its
//     REST URL holds no byte that would need escaping in an HTTP request line;
//   - an error message never copies more than a bounded part of a non-JSON body.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/webhdfs_errors.h"
#include "io/webhdfs_json.h"
#include "io/webhdfs_url.h"

namespace {

using namespace sluice::io::webhdfs;  // NOLINT

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzJson(std::string_view body) {
  auto status = ParseFileStatus(body);
  if (status.ok()) Check(!status->is_directory || status->length == 0);
  auto list = ParseFileStatuses(body);
  if (list.ok()) {
    for (const FileStatus& s : *list) Check(!s.is_directory || s.length == 0);
  }
  (void)ParseBoolean(body);
  (void)ParseBlockLocations(body);
  (void)ParseLocatedBlocks(body);
  (void)ParseLocation(body);
  auto remote = ParseRemoteException(body);
  sluice::Status error = ReplyError("OPEN", "hdfs://nn:1/x", 500, body);
  Check(!error.ok());
  if (!remote.has_value()) Check(error.message().size() < 300);
  (void)ErrorCode(500, body);
}

void FuzzUri(std::string_view text) {
  auto uri = ParseHdfsUri(text);
  if (!uri.ok()) return;
  auto again = ParseHdfsUri(uri->ToString());
  Check(again.ok());
  Check(again->host == uri->host && again->port == uri->port && again->path == uri->path);
  std::string url = RestUrl(*uri, "OPEN", std::string(text), {{"destination", std::string(text)}});
  for (char c : url) Check(c > 0x20 && c < 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  FuzzJson(input);
  FuzzUri(input);
  return 0;
}

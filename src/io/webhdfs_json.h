// The JSON replies of the WebHDFS REST API, parsed (hadoop-hdfs WebHDFS.md, "JSON Schemas").
// Pure functions of the reply body: no I/O, fuzzed by tests/fuzz/webhdfs_json_fuzz.cc. A
// reply that does not have the documented shape is an error (IoError naming what is wrong);
// properties the client does not use are ignored, as the schema allows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/io/block_location.h"

namespace sluice::io::webhdfs {

// The FileStatus JSON object, the fields sluice uses.
struct FileStatus {
  std::string path_suffix;  // "" for GETFILESTATUS, the entry's name in LISTSTATUS
  bool is_directory = false;
  uint64_t length = 0;  // bytes; 0 for directories
  uint64_t modification_time_ms = 0;
  uint64_t block_size = 0;
};

// {"RemoteException": {"exception": ..., "javaClassName": ..., "message": ...}}
struct RemoteException {
  std::string exception;        // "FileNotFoundException"
  std::string java_class_name;  // "java.io.FileNotFoundException"
  std::string message;
};

// GETFILESTATUS: {"FileStatus": {...}}.
Result<FileStatus> ParseFileStatus(std::string_view body);
// LISTSTATUS: {"FileStatuses": {"FileStatus": [...]}}, in the order given.
Result<std::vector<FileStatus>> ParseFileStatuses(std::string_view body);
// MKDIRS, RENAME (without renameoptions), DELETE: {"boolean": true|false}.
Result<bool> ParseBoolean(std::string_view body);
// GETFILEBLOCKLOCATIONS: {"BlockLocations": {"BlockLocation": [...]}}.
Result<std::vector<BlockLocation>> ParseBlockLocations(std::string_view body);
// GET_BLOCK_LOCATIONS, the private operation of NameNodes older than GETFILEBLOCKLOCATIONS
// (Hadoop's own client falls back to it): {"LocatedBlocks": {"locatedBlocks": [{"startOffset",
// "isCorrupt", "block": {"numBytes"}, "locations": [{"hostName", "ipAddr", "xferPort"}]}]}}.
Result<std::vector<BlockLocation>> ParseLocatedBlocks(std::string_view body);
// The reply of OPEN/CREATE/APPEND with noredirect=true: {"Location": "http://..."}.
Result<std::string> ParseLocation(std::string_view body);
// The error object of a failed request; nullopt when `body` is not one.
std::optional<RemoteException> ParseRemoteException(std::string_view body);

}  // namespace sluice::io::webhdfs

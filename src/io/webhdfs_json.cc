// WebHDFS JSON replies (webhdfs_json.h). nlohmann::json is used without exceptions: parse
// failures give a discarded value and every access checks the type first.
#include "io/webhdfs_json.h"

#include <nlohmann/json.hpp>

namespace sluice::io::webhdfs {

namespace {

using Json = nlohmann::json;

Status Malformed(std::string_view what) {
  return IoError("malformed WebHDFS reply: " + std::string(what));
}

Result<Json> ParseObject(std::string_view body) {
  Json json = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Malformed("not JSON");
  if (!json.is_object()) return Malformed("not a JSON object");
  return json;
}

// The member `key` of `object` when it has `type`-checked kind, else nullptr.
const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Result<uint64_t> Unsigned(const Json& object, const char* key, bool required) {
  const Json* v = Member(object, key);
  if (v == nullptr) {
    if (required) return Malformed(std::string("no \"") + key + "\"");
    return uint64_t{0};
  }
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer() && v->get<int64_t>() >= 0) return uint64_t(v->get<int64_t>());
  return Malformed(std::string("\"") + key + "\" is not a non-negative integer");
}

std::string String(const Json& object, const char* key) {
  const Json* v = Member(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

Result<FileStatus> ToFileStatus(const Json& json) {
  if (!json.is_object()) return Malformed("a FileStatus is not an object");
  FileStatus status;
  const Json* type = Member(json, "type");
  if (type == nullptr || !type->is_string()) return Malformed("FileStatus without \"type\"");
  const std::string& kind = type->get_ref<const std::string&>();
  if (kind == "DIRECTORY") {
    status.is_directory = true;
  } else if (kind != "FILE" && kind != "SYMLINK") {
    return Malformed("FileStatus of unknown type \"" + kind + "\"");
  }
  const Json* suffix = Member(json, "pathSuffix");
  if (suffix != nullptr && !suffix->is_string()) return Malformed("\"pathSuffix\" not a string");
  status.path_suffix = String(json, "pathSuffix");
  SLUICE_ASSIGN_OR_RETURN(status.length, Unsigned(json, "length", /*required=*/true));
  SLUICE_ASSIGN_OR_RETURN(status.modification_time_ms, Unsigned(json, "modificationTime", false));
  SLUICE_ASSIGN_OR_RETURN(status.block_size, Unsigned(json, "blockSize", false));
  if (status.is_directory) status.length = 0;
  return status;
}

Result<std::vector<std::string>> Strings(const Json& object, const char* key) {
  std::vector<std::string> out;
  const Json* v = Member(object, key);
  if (v == nullptr) return out;
  if (!v->is_array()) return Malformed(std::string("\"") + key + "\" is not an array");
  for (const Json& item : *v) {
    if (!item.is_string()) return Malformed(std::string("\"") + key + "\" holds a non-string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<BlockLocation> ToBlockLocation(const Json& json) {
  if (!json.is_object()) return Malformed("a BlockLocation is not an object");
  BlockLocation block;
  SLUICE_ASSIGN_OR_RETURN(block.offset, Unsigned(json, "offset", /*required=*/true));
  SLUICE_ASSIGN_OR_RETURN(block.length, Unsigned(json, "length", /*required=*/true));
  SLUICE_ASSIGN_OR_RETURN(block.hosts, Strings(json, "hosts"));
  SLUICE_ASSIGN_OR_RETURN(block.names, Strings(json, "names"));
  const Json* corrupt = Member(json, "corrupt");
  block.corrupt = corrupt != nullptr && corrupt->is_boolean() && corrupt->get<bool>();
  return block;
}

// One LocatedBlock of GET_BLOCK_LOCATIONS.
Result<BlockLocation> FromLocatedBlock(const Json& json) {
  if (!json.is_object()) return Malformed("a LocatedBlock is not an object");
  BlockLocation block;
  SLUICE_ASSIGN_OR_RETURN(block.offset, Unsigned(json, "startOffset", /*required=*/true));
  const Json* extended = Member(json, "block");
  if (extended == nullptr) return Malformed("LocatedBlock without \"block\"");
  SLUICE_ASSIGN_OR_RETURN(block.length, Unsigned(*extended, "numBytes", /*required=*/true));
  const Json* locations = Member(json, "locations");
  if (locations != nullptr && !locations->is_array()) return Malformed("\"locations\" not a list");
  static const Json kNone = Json::array();
  for (const Json& datanode : locations == nullptr ? kNone : *locations) {
    std::string host = String(datanode, "hostName");
    if (host.empty()) return Malformed("a datanode without \"hostName\"");
    SLUICE_ASSIGN_OR_RETURN(uint64_t port, Unsigned(datanode, "xferPort", false));
    block.hosts.push_back(host);
    block.names.push_back(String(datanode, "ipAddr") + ":" + std::to_string(port));
  }
  const Json* corrupt = Member(json, "isCorrupt");
  block.corrupt = corrupt != nullptr && corrupt->is_boolean() && corrupt->get<bool>();
  return block;
}

// {"<outer>": {"<inner>": [item, ...]}}, each item converted by `convert`.
template <typename T>
Result<std::vector<T>> ParseList(std::string_view body, const char* outer, const char* inner,
                                 Result<T> (*convert)(const Json&)) {
  SLUICE_ASSIGN_OR_RETURN(Json json, ParseObject(body));
  const Json* wrapper = Member(json, outer);
  const Json* list = wrapper == nullptr ? nullptr : Member(*wrapper, inner);
  if (list == nullptr || !list->is_array()) {
    return Malformed(std::string("no \"") + outer + "\" list");
  }
  std::vector<T> out;
  out.reserve(list->size());
  for (const Json& item : *list) {
    SLUICE_ASSIGN_OR_RETURN(T value, convert(item));
    out.push_back(std::move(value));
  }
  return out;
}

}  // namespace

Result<FileStatus> ParseFileStatus(std::string_view body) {
  SLUICE_ASSIGN_OR_RETURN(Json json, ParseObject(body));
  const Json* status = Member(json, "FileStatus");
  if (status == nullptr) return Malformed("no \"FileStatus\"");
  return ToFileStatus(*status);
}

Result<std::vector<FileStatus>> ParseFileStatuses(std::string_view body) {
  return ParseList<FileStatus>(body, "FileStatuses", "FileStatus", ToFileStatus);
}

Result<bool> ParseBoolean(std::string_view body) {
  SLUICE_ASSIGN_OR_RETURN(Json json, ParseObject(body));
  const Json* value = Member(json, "boolean");
  if (value == nullptr || !value->is_boolean()) return Malformed("no \"boolean\"");
  return value->get<bool>();
}

Result<std::vector<BlockLocation>> ParseBlockLocations(std::string_view body) {
  return ParseList<BlockLocation>(body, "BlockLocations", "BlockLocation", ToBlockLocation);
}

Result<std::vector<BlockLocation>> ParseLocatedBlocks(std::string_view body) {
  return ParseList<BlockLocation>(body, "LocatedBlocks", "locatedBlocks", FromLocatedBlock);
}

Result<std::string> ParseLocation(std::string_view body) {
  SLUICE_ASSIGN_OR_RETURN(Json json, ParseObject(body));
  std::string location = String(json, "Location");
  if (location.empty()) return Malformed("no \"Location\"");
  return location;
}

std::optional<RemoteException> ParseRemoteException(std::string_view body) {
  Result<Json> json = ParseObject(body);
  if (!json.ok()) return std::nullopt;
  const Json* remote = Member(*json, "RemoteException");
  if (remote == nullptr || !remote->is_object()) return std::nullopt;
  RemoteException out{String(*remote, "exception"), String(*remote, "javaClassName"),
                      String(*remote, "message")};
  if (out.exception.empty()) {
    // Some servers send only the Java class name: keep its last component.
    size_t dot = out.java_class_name.rfind('.');
    out.exception = out.java_class_name.substr(dot == std::string::npos ? 0 : dot + 1);
  }
  if (out.exception.empty() && out.message.empty()) return std::nullopt;
  return out;
}

}  // namespace sluice::io::webhdfs

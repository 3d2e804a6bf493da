// Delta log actions <-> newline-delimited JSON (PROTOCOL.md, "Actions"). Parsing is strict
// about the fields the protocol calls required and lenient about everything else: unknown
// fields and actions are skipped, as readers must.
#include "sluice/table/actions.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "log_json.h"
#include "sluice/base/utf8.h"

namespace sluice::table {
namespace {

using Json = nlohmann::ordered_json;

// Reads the fields of one action, naming the file, line and field in errors.
class Fields {
 public:
  Fields(const Json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Status Error(const std::string& field, const std::string& problem) const {
    return DataLoss(where_ + ": " + field + ": " + problem);
  }
  const Json* Find(const char* key) const {
    auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }
  Result<std::string> String(const char* key) const {
    const Json* v = Find(key);
    if (v == nullptr) return Error(key, "missing");
    if (!v->is_string()) return Error(key, "expected a string");
    return v->get<std::string>();
  }
  Result<std::optional<std::string>> OptString(const char* key) const {
    if (Find(key) == nullptr) return std::optional<std::string>();
    SLUICE_ASSIGN_OR_RETURN(std::string s, String(key));
    return std::optional<std::string>(std::move(s));
  }
  Result<int64_t> Int(const char* key) const {
    const Json* v = Find(key);
    if (v == nullptr) return Error(key, "missing");
    if (!v->is_number_integer()) return Error(key, "expected an integer");
    return v->get<int64_t>();
  }
  Result<std::optional<int64_t>> OptInt(const char* key) const {
    if (Find(key) == nullptr) return std::optional<int64_t>();
    SLUICE_ASSIGN_OR_RETURN(int64_t v, Int(key));
    return std::optional<int64_t>(v);
  }
  Result<bool> Bool(const char* key) const {
    const Json* v = Find(key);
    if (v == nullptr) return Error(key, "missing");
    if (!v->is_boolean()) return Error(key, "expected true or false");
    return v->get<bool>();
  }
  Result<bool> BoolOr(const char* key, bool fallback) const {
    if (Find(key) == nullptr) return fallback;
    return Bool(key);
  }
  // A map of strings; absent means empty. Non-string values are kept as their JSON text.
  Result<std::map<std::string, std::string>> StringMap(const char* key) const {
    std::map<std::string, std::string> out;
    const Json* v = Find(key);
    if (v == nullptr) return out;
    if (!v->is_object()) return Error(key, "expected an object");
    for (const auto& [k, value] : v->items()) {
      if (value.is_null()) continue;
      out[k] = value.is_string() ? value.get<std::string>() : value.dump();
    }
    return out;
  }
  Result<PartitionValues> Partitions(const char* key, bool required) const {
    PartitionValues out;
    const Json* v = Find(key);
    if (v == nullptr) {
      if (required) return Error(key, "missing");
      return out;
    }
    if (!v->is_object()) return Error(key, "expected an object");
    for (const auto& [k, value] : v->items()) {
      if (value.is_null()) {
        out[k] = std::nullopt;
      } else if (value.is_string()) {
        out[k] = value.get<std::string>();
      } else {
        return Error(std::string(key) + "." + k, "expected a string or null");
      }
    }
    return out;
  }
  Result<std::optional<std::vector<std::string>>> OptStrings(const char* key) const {
    const Json* v = Find(key);
    if (v == nullptr) return std::optional<std::vector<std::string>>();
    if (!v->is_array()) return Error(key, "expected an array of strings");
    std::vector<std::string> out;
    for (const Json& item : *v) {
      if (!item.is_string()) return Error(key, "expected an array of strings");
      out.push_back(item.get<std::string>());
    }
    return std::optional<std::vector<std::string>>(std::move(out));
  }

 private:
  const Json& obj_;
  const std::string where_;
};

Result<Protocol> ParseProtocol(const Fields& f) {
  Protocol p;
  SLUICE_ASSIGN_OR_RETURN(int64_t reader, f.Int("minReaderVersion"));
  SLUICE_ASSIGN_OR_RETURN(int64_t writer, f.Int("minWriterVersion"));
  if (reader < 1 || writer < 1 || reader > INT32_MAX || writer > INT32_MAX) {
    return f.Error("minReaderVersion", "versions must be positive");
  }
  p.min_reader_version = static_cast<int32_t>(reader);
  p.min_writer_version = static_cast<int32_t>(writer);
  SLUICE_ASSIGN_OR_RETURN(p.reader_features, f.OptStrings("readerFeatures"));
  SLUICE_ASSIGN_OR_RETURN(p.writer_features, f.OptStrings("writerFeatures"));
  return p;
}

Result<Metadata> ParseMetadata(const Fields& f, const std::string& where) {
  Metadata m;
  SLUICE_ASSIGN_OR_RETURN(m.id, f.String("id"));
  SLUICE_ASSIGN_OR_RETURN(m.name, f.OptString("name"));
  SLUICE_ASSIGN_OR_RETURN(m.description, f.OptString("description"));
  const Json* format = f.Find("format");
  if (format == nullptr || !format->is_object()) return f.Error("format", "missing");
  Fields ff(*format, where);
  SLUICE_ASSIGN_OR_RETURN(m.format_provider, ff.String("provider"));
  SLUICE_ASSIGN_OR_RETURN(m.format_options, ff.StringMap("options"));
  SLUICE_ASSIGN_OR_RETURN(m.schema_string, f.String("schemaString"));
  SLUICE_ASSIGN_OR_RETURN(auto columns, f.OptStrings("partitionColumns"));
  if (!columns.has_value()) return f.Error("partitionColumns", "missing");
  m.partition_columns = std::move(*columns);
  SLUICE_ASSIGN_OR_RETURN(m.created_time, f.OptInt("createdTime"));
  SLUICE_ASSIGN_OR_RETURN(m.configuration, f.StringMap("configuration"));
  return m;
}

Result<AddFile> ParseAdd(const Fields& f) {
  AddFile a;
  SLUICE_ASSIGN_OR_RETURN(a.path, f.String("path"));
  if (a.path.empty()) return f.Error("path", "empty");
  SLUICE_ASSIGN_OR_RETURN(a.partition_values, f.Partitions("partitionValues", true));
  SLUICE_ASSIGN_OR_RETURN(a.size, f.Int("size"));
  if (a.size < 0) return f.Error("size", "negative");
  SLUICE_ASSIGN_OR_RETURN(a.modification_time, f.Int("modificationTime"));
  SLUICE_ASSIGN_OR_RETURN(a.data_change, f.Bool("dataChange"));
  SLUICE_ASSIGN_OR_RETURN(a.stats, f.OptString("stats"));
  SLUICE_ASSIGN_OR_RETURN(a.tags, f.StringMap("tags"));
  a.has_deletion_vector = f.Find("deletionVector") != nullptr;
  return a;
}

Result<RemoveFile> ParseRemove(const Fields& f) {
  RemoveFile r;
  SLUICE_ASSIGN_OR_RETURN(r.path, f.String("path"));
  if (r.path.empty()) return f.Error("path", "empty");
  SLUICE_ASSIGN_OR_RETURN(r.deletion_timestamp, f.OptInt("deletionTimestamp"));
  SLUICE_ASSIGN_OR_RETURN(r.data_change, f.Bool("dataChange"));
  SLUICE_ASSIGN_OR_RETURN(r.extended_file_metadata, f.BoolOr("extendedFileMetadata", false));
  SLUICE_ASSIGN_OR_RETURN(r.partition_values, f.Partitions("partitionValues", false));
  SLUICE_ASSIGN_OR_RETURN(r.size, f.OptInt("size"));
  SLUICE_ASSIGN_OR_RETURN(r.tags, f.StringMap("tags"));
  r.has_deletion_vector = f.Find("deletionVector") != nullptr;
  return r;
}

Result<Txn> ParseTxn(const Fields& f) {
  Txn t;
  SLUICE_ASSIGN_OR_RETURN(t.app_id, f.String("appId"));
  SLUICE_ASSIGN_OR_RETURN(t.version, f.Int("version"));
  SLUICE_ASSIGN_OR_RETURN(t.last_updated, f.OptInt("lastUpdated"));
  return t;
}

// commitInfo is free-form: a field of an unexpected type is ignored, never an error.
CommitInfo ParseCommitInfo(const Json& j) {
  CommitInfo c;
  auto int_of = [&](const char* key) -> std::optional<int64_t> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  auto string_of = [&](const char* key) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  auto map_of = [&](const char* key) {
    std::map<std::string, std::string> out;
    auto it = j.find(key);
    if (it == j.end() || !it->is_object()) return out;
    for (const auto& [k, v] : it->items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    return out;
  };
  c.timestamp = int_of("timestamp");
  c.in_commit_timestamp = int_of("inCommitTimestamp");
  c.operation = string_of("operation").value_or("");
  c.operation_parameters = map_of("operationParameters");
  c.operation_metrics = map_of("operationMetrics");
  c.read_version = int_of("readVersion");
  if (auto it = j.find("isBlindAppend"); it != j.end() && it->is_boolean()) {
    c.is_blind_append = it->get<bool>();
  }
  c.txn_id = string_of("txnId");
  c.engine_info = string_of("engineInfo");
  if (auto it = j.find("sluice"); it != j.end() && it->is_object()) {
    auto n = it->find("actions");
    if (n != it->end() && n->is_number_integer()) c.sluice_actions = n->get<int64_t>();
  }
  c.json = j.dump();
  return c;
}

Result<std::optional<Action>> ParseAction(const std::string& type, const Json& body,
                                          const std::string& where) {
  if (!body.is_object()) return DataLoss(where + ": " + type + ": expected an object");
  Fields f(body, where + ": " + type);
  if (type == "protocol") {
    SLUICE_ASSIGN_OR_RETURN(Protocol p, ParseProtocol(f));
    return std::optional<Action>(std::move(p));
  }
  if (type == "metaData") {
    SLUICE_ASSIGN_OR_RETURN(Metadata m, ParseMetadata(f, where + ": metaData.format"));
    return std::optional<Action>(std::move(m));
  }
  if (type == "add") {
    SLUICE_ASSIGN_OR_RETURN(AddFile a, ParseAdd(f));
    return std::optional<Action>(std::move(a));
  }
  if (type == "remove") {
    SLUICE_ASSIGN_OR_RETURN(RemoveFile r, ParseRemove(f));
    return std::optional<Action>(std::move(r));
  }
  if (type == "txn") {
    SLUICE_ASSIGN_OR_RETURN(Txn t, ParseTxn(f));
    return std::optional<Action>(std::move(t));
  }
  if (type == "commitInfo") return std::optional<Action>(ParseCommitInfo(body));
  if (type == "checkpointMetadata") {
    CheckpointMetadata c;
    SLUICE_ASSIGN_OR_RETURN(c.version, f.Int("version"));
    SLUICE_ASSIGN_OR_RETURN(c.tags, f.StringMap("tags"));
    return std::optional<Action>(std::move(c));
  }
  if (type == "sidecar") {
    Sidecar s;
    SLUICE_ASSIGN_OR_RETURN(s.path, f.String("path"));
    SLUICE_ASSIGN_OR_RETURN(s.size_in_bytes, f.Int("sizeInBytes"));
    return std::optional<Action>(std::move(s));
  }
  return std::optional<Action>();  // cdc, domainMetadata, future actions: not needed here
}

Json PartitionsJson(const PartitionValues& values) {
  Json out = Json::object();
  for (const auto& [k, v] : values) out[k] = v.has_value() ? Json(*v) : Json(nullptr);
  return out;
}

Json MapJson(const std::map<std::string, std::string>& values) {
  Json out = Json::object();
  for (const auto& [k, v] : values) out[k] = v;
  return out;
}

struct ActionJson {
  Json operator()(const Protocol& p) const {
    Json j = {{"minReaderVersion", p.min_reader_version},
              {"minWriterVersion", p.min_writer_version}};
    if (p.reader_features) j["readerFeatures"] = *p.reader_features;
    if (p.writer_features) j["writerFeatures"] = *p.writer_features;
    return {{"protocol", j}};
  }
  Json operator()(const Metadata& m) const {
    Json j = {{"id", m.id}};
    if (m.name) j["name"] = *m.name;
    if (m.description) j["description"] = *m.description;
    j["format"] = {{"provider", m.format_provider}, {"options", MapJson(m.format_options)}};
    j["schemaString"] = m.schema_string;
    j["partitionColumns"] = m.partition_columns;
    if (m.created_time) j["createdTime"] = *m.created_time;
    j["configuration"] = MapJson(m.configuration);
    return {{"metaData", j}};
  }
  Json operator()(const AddFile& a) const {
    Json j = {{"path", a.path},
              {"partitionValues", PartitionsJson(a.partition_values)},
              {"size", a.size},
              {"modificationTime", a.modification_time},
              {"dataChange", a.data_change}};
    if (a.stats) j["stats"] = *a.stats;
    if (!a.tags.empty()) j["tags"] = MapJson(a.tags);
    return {{"add", j}};
  }
  Json operator()(const RemoveFile& r) const {
    Json j = {{"path", r.path}};
    if (r.deletion_timestamp) j["deletionTimestamp"] = *r.deletion_timestamp;
    j["dataChange"] = r.data_change;
    if (r.extended_file_metadata) {
      j["extendedFileMetadata"] = true;
      j["partitionValues"] = PartitionsJson(r.partition_values);
      if (r.size) j["size"] = *r.size;
    }
    if (!r.tags.empty()) j["tags"] = MapJson(r.tags);
    return {{"remove", j}};
  }
  Json operator()(const Txn& t) const {
    Json j = {{"appId", t.app_id}, {"version", t.version}};
    if (t.last_updated) j["lastUpdated"] = *t.last_updated;
    return {{"txn", j}};
  }
  Json operator()(const CommitInfo& c) const {
    Json j = Json::object();
    if (c.in_commit_timestamp) j["inCommitTimestamp"] = *c.in_commit_timestamp;
    if (c.timestamp) j["timestamp"] = *c.timestamp;
    j["operation"] = c.operation;
    j["operationParameters"] = MapJson(c.operation_parameters);
    if (!c.operation_metrics.empty()) j["operationMetrics"] = MapJson(c.operation_metrics);
    if (c.read_version) j["readVersion"] = *c.read_version;
    if (c.is_blind_append) j["isBlindAppend"] = *c.is_blind_append;
    if (c.engine_info) j["engineInfo"] = *c.engine_info;
    if (c.txn_id) j["txnId"] = *c.txn_id;
    if (c.sluice_actions) j["sluice"] = {{"actions", *c.sluice_actions}};
    return {{"commitInfo", j}};
  }
  Json operator()(const CheckpointMetadata& c) const {
    return {{"checkpointMetadata", {{"version", c.version}, {"tags", MapJson(c.tags)}}}};
  }
  Json operator()(const Sidecar& s) const {
    return {{"sidecar", {{"path", s.path}, {"sizeInBytes", s.size_in_bytes}}}};
  }
};

bool Contains(const std::optional<std::vector<std::string>>& list, std::string_view name) {
  return list.has_value() && std::find(list->begin(), list->end(), name) != list->end();
}

}  // namespace

bool Protocol::HasReaderFeature(std::string_view name) const {
  return Contains(reader_features, name);
}
bool Protocol::HasWriterFeature(std::string_view name) const {
  return Contains(writer_features, name);
}

std::optional<int64_t> AddFile::num_records() const {
  if (!stats.has_value()) return std::nullopt;
  Json j = ParseLogJson(*stats);
  if (!j.is_object()) return std::nullopt;
  auto it = j.find("numRecords");
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return std::nullopt;
  return it->get<int64_t>();
}

Result<ParsedLogFile> ParseActions(std::string_view text, const std::string& source) {
  ParsedLogFile out;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++out.lines;
    const std::string where = source + ": line " + std::to_string(line_no);
    if (line.size() > kMaxLogLineBytes) {
      return DataLoss(where + ": a line of " + std::to_string(line.size()) +
                      " bytes, more than the " + std::to_string(kMaxLogLineBytes) +
                      " an action may hold (corrupt commit?)");
    }
    bool too_deep = false;
    Json j = ParseLogJson(line, &too_deep);
    if (too_deep) {
      return DataLoss(where + ": JSON nested more than " + std::to_string(kMaxLogJsonDepth) +
                      " levels deep, more than any action holds (corrupt commit?)");
    }
    if (j.is_discarded() || !j.is_object()) {
      return DataLoss(where + ": not a JSON object (truncated or corrupt commit?): '" +
                      EscapeBytes(line, 80) + "'");
    }
    if (j.size() != 1) {
      return DataLoss(where + ": an action is an object with exactly one key, found " +
                      std::to_string(j.size()));
    }
    SLUICE_ASSIGN_OR_RETURN(std::optional<Action> action,
                            ParseAction(j.begin().key(), j.begin().value(), where));
    if (action.has_value()) {
      out.actions.push_back(std::move(*action));
    } else {
      ++out.ignored;
    }
  }
  return out;
}

std::string SerializeAction(const Action& action) {
  return std::visit(ActionJson{}, action).dump();
}

std::string SerializeActions(const std::vector<Action>& actions) {
  std::string out;
  for (const Action& a : actions) {
    out += SerializeAction(a);
    out += '\n';
  }
  return out;
}

std::string RecordCountStats(int64_t records) { return Json{{"numRecords", records}}.dump(); }

}  // namespace sluice::table

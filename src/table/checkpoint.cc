#include "checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "log_json.h"

namespace sluice::table {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;

void AddFeature(std::vector<std::string>* list, std::string_view name) {
  if (std::find(list->begin(), list->end(), name) == list->end()) list->emplace_back(name);
}

std::optional<int64_t> OptInt(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

// "interval 7 days", "interval 1 week", "168 hours": Spark's CalendarInterval spellings.
std::optional<int64_t> ParseIntervalMs(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text.rfind("interval ", 0) == 0) text = text.substr(9);
  char* end = nullptr;
  long long n = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || n < 0) return std::nullopt;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  if (!unit.empty() && unit.back() == 's') unit.pop_back();
  const std::pair<const char*, int64_t> units[] = {{"millisecond", 1}, {"second", 1000},
                                                   {"minute", 60000},  {"hour", 3600 * 1000},
                                                   {"day", kDayMs},    {"week", 7 * kDayMs}};
  for (const auto& [name, ms] : units) {
    if (unit == name) return n * ms;
  }
  return std::nullopt;
}

}  // namespace

std::optional<LastCheckpointHint> ParseLastCheckpoint(std::string_view json) {
  Json j = ParseLogJson(json);
  if (!j.is_object()) return std::nullopt;
  LastCheckpointHint h;
  std::optional<int64_t> version = OptInt(j, "version");
  if (!version.has_value() || *version < 0) return std::nullopt;
  h.version = *version;
  h.size = OptInt(j, "size").value_or(0);
  h.size_in_bytes = OptInt(j, "sizeInBytes");
  h.num_of_add_files = OptInt(j, "numOfAddFiles");
  auto tags = j.find("tags");
  if (tags != j.end() && tags->is_object()) {
    auto file = tags->find(kCheckpointFileTag);
    if (file != tags->end() && file->is_string()) h.file = file->get<std::string>();
  }
  return h;
}

std::string SerializeLastCheckpoint(const LastCheckpointHint& hint) {
  Json j = {{"version", hint.version}, {"size", hint.size}};
  if (hint.size_in_bytes) j["sizeInBytes"] = *hint.size_in_bytes;
  if (hint.num_of_add_files) j["numOfAddFiles"] = *hint.num_of_add_files;
  if (hint.file) j["tags"] = {{std::string(kCheckpointFileTag), *hint.file}};
  return j.dump();
}

CheckpointContent BuildCheckpoint(const TableState& state, int64_t tombstone_cutoff_ms) {
  CheckpointContent c;
  auto emit = [&](const Action& a) {
    c.text += SerializeAction(a);
    c.text += '\n';
    ++c.actions;
  };
  CheckpointMetadata meta;
  meta.version = state.version;
  if (state.timestamp_ms > 0) {
    meta.tags["sluice.commitTimestamp"] = std::to_string(state.timestamp_ms);
  }
  emit(meta);
  emit(*state.protocol);
  emit(*state.metadata);
  for (const auto& [_, txn] : state.txns) emit(txn);
  for (const auto& [_, add] : state.files) {
    AddFile a = add;
    a.data_change = false;  // a checkpoint restates the table; it changes no data
    emit(a);
    ++c.adds;
  }
  for (const auto& [_, remove] : state.tombstones) {
    if (remove.deletion_timestamp.value_or(0) < tombstone_cutoff_ms) continue;  // expired
    RemoveFile r = remove;
    r.data_change = false;
    r.tags.clear();  // checkpoints keep tombstones for vacuum only (PROTOCOL.md)
    emit(r);
  }
  return c;
}

Protocol ProtocolWithV2Checkpoints(const Protocol& current) {
  if (current.HasReaderFeature(kV2CheckpointFeature)) return current;
  Protocol p;
  p.min_reader_version = 3;
  p.min_writer_version = 7;
  p.reader_features = current.reader_features.value_or(std::vector<std::string>{});
  p.writer_features = current.writer_features.value_or(std::vector<std::string>{});
  // The legacy versions' implied features, named (PROTOCOL.md, "Table Features").
  if (current.min_writer_version >= 2) {
    AddFeature(&*p.writer_features, "appendOnly");
    AddFeature(&*p.writer_features, "invariants");
  }
  AddFeature(&*p.reader_features, kV2CheckpointFeature);
  AddFeature(&*p.writer_features, kV2CheckpointFeature);
  return p;
}

std::optional<int64_t> ParseCheckpointInterval(const std::string& value) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || errno != 0 || v < 0) return std::nullopt;
  return v;
}

int64_t CheckpointInterval(const Metadata& metadata, int64_t fallback) {
  auto it = metadata.configuration.find(std::string(kCheckpointIntervalProperty));
  if (it == metadata.configuration.end()) return fallback;
  return ParseCheckpointInterval(it->second).value_or(fallback);
}

int64_t DeletedFileRetentionMs(const Metadata& metadata) {
  auto it = metadata.configuration.find("delta.deletedFileRetentionDuration");
  if (it != metadata.configuration.end()) {
    if (std::optional<int64_t> ms = ParseIntervalMs(it->second)) return *ms;
  }
  return 7 * kDayMs;
}

}  // namespace sluice::table

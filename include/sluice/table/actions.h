// The actions of the Delta Lake transaction log (PROTOCOL.md in delta-io/delta, "Actions"),
// as plain values, and their newline-delimited JSON form. Only the fields sluice uses are
// typed; unknown fields and unknown actions are ignored on read, as the protocol requires
// ("clients must ignore unrecognized fields"). docs/table.md lists what sluice writes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::table {

// `protocol`: the reader and writer versions (and, from reader 3 / writer 7, the named
// features) a client must implement to read or write the table.
struct Protocol {
  int32_t min_reader_version = 1;
  int32_t min_writer_version = 2;
  // Present exactly when min_reader_version == 3 / min_writer_version == 7.
  std::optional<std::vector<std::string>> reader_features;
  std::optional<std::vector<std::string>> writer_features;

  bool HasReaderFeature(std::string_view name) const;
  bool HasWriterFeature(std::string_view name) const;
  bool operator==(const Protocol&) const = default;
};

// `metaData`: the table's identity, data format, schema (Spark's StructType JSON),
// partition columns and configuration (table properties such as delta.checkpointInterval).
struct Metadata {
  std::string id;  // a UUID
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::string format_provider = "tfrecord";
  std::map<std::string, std::string> format_options;
  std::string schema_string = R"({"type":"struct","fields":[]})";
  std::vector<std::string> partition_columns;
  std::optional<int64_t> created_time;  // ms since the Unix epoch
  std::map<std::string, std::string> configuration;

  bool operator==(const Metadata&) const = default;
};

// Partition values are strings or null (a null partition), keyed by partition column.
using PartitionValues = std::map<std::string, std::optional<std::string>>;

// `add`: a data file is part of the table from this version on.
struct AddFile {
  std::string path;  // relative to the table root, URI-encoded as the log spells it
  PartitionValues partition_values;
  int64_t size = 0;               // bytes
  int64_t modification_time = 0;  // ms since the Unix epoch
  bool data_change = true;
  std::optional<std::string> stats;  // a JSON document as a string: {"numRecords":N,...}
  std::map<std::string, std::string> tags;
  // A deletion vector (rows of the file deleted), which sluice cannot apply: readers refuse
  // tables that may hold them (the deletionVectors reader feature), so this only records
  // that one was present.
  bool has_deletion_vector = false;

  // stats.numRecords when present and valid.
  std::optional<int64_t> num_records() const;
  bool operator==(const AddFile&) const = default;
};

// `remove`: a data file leaves the table; it stays as a tombstone (for vacuum) until expired.
struct RemoveFile {
  std::string path;
  std::optional<int64_t> deletion_timestamp;  // ms since the Unix epoch
  bool data_change = true;
  bool extended_file_metadata = false;
  PartitionValues partition_values;  // with extended_file_metadata
  std::optional<int64_t> size;       // with extended_file_metadata
  std::map<std::string, std::string> tags;
  bool has_deletion_vector = false;

  bool operator==(const RemoveFile&) const = default;
};

// `txn`: the latest progress of an application (appId), for idempotent retries of jobs.
struct Txn {
  std::string app_id;
  int64_t version = 0;
  std::optional<int64_t> last_updated;

  bool operator==(const Txn&) const = default;
};

// `commitInfo`: free-form provenance. The typed fields are the ones sluice reads; `json`
// holds the whole object as written.
struct CommitInfo {
  std::optional<int64_t> timestamp;                         // ms; "timestamp"
  std::optional<int64_t> in_commit_timestamp;               // ms; "inCommitTimestamp"
  std::string operation;                                    // "WRITE", "DELETE", "OPTIMIZE", ...
  std::map<std::string, std::string> operation_parameters;  // values JSON-encoded, as Spark
  std::map<std::string, std::string> operation_metrics;     // "numFiles": "3", ...
  std::optional<int64_t> read_version;
  std::optional<bool> is_blind_append;
  std::optional<std::string> txn_id;  // "txnId": the writer's attempt identity
  std::optional<std::string> engine_info;
  // sluice's own commits state how many actions follow commitInfo ("sluice":{"actions":N}),
  // which lets a reader tell a commit truncated at a line boundary from a complete one.
  std::optional<int64_t> sluice_actions;
  std::string json;  // the object, serialized; empty for a CommitInfo built in memory

  bool operator==(const CommitInfo&) const = default;
};

// `checkpointMetadata`: only in V2-spec checkpoints (docs/table.md, "Checkpoints").
struct CheckpointMetadata {
  int64_t version = 0;
  std::map<std::string, std::string> tags;
  bool operator==(const CheckpointMetadata&) const = default;
};

// `sidecar`: a V2 checkpoint's pointer to a Parquet file of add/remove actions. sluice writes
// none and cannot read them (no Parquet library is packaged here).
struct Sidecar {
  std::string path;
  int64_t size_in_bytes = 0;
  bool operator==(const Sidecar&) const = default;
};

using Action = std::variant<Protocol, Metadata, AddFile, RemoveFile, Txn, CommitInfo,
                            CheckpointMetadata, Sidecar>;

// The actions of one log file, in file order. Unknown actions (cdc, domainMetadata, ...) are
// counted in `ignored` and otherwise skipped.
struct ParsedLogFile {
  std::vector<Action> actions;
  int64_t lines = 0;    // non-empty lines
  int64_t ignored = 0;  // lines holding an action sluice does not use
};

// Parses newline-delimited JSON actions. `source` names the file in errors: DataLoss
// "<source>: line 3: not a JSON object (truncated or corrupt?) ..." for a damaged line, or an
// action of the wrong shape (a missing required field, a wrong type).
Result<ParsedLogFile> ParseActions(std::string_view text, const std::string& source);

// One action as one line of JSON (no newline), with the field names of PROTOCOL.md.
std::string SerializeAction(const Action& action);
// Actions joined with '\n', ending with a newline.
std::string SerializeActions(const std::vector<Action>& actions);

// The stats JSON sluice writes for a shard: {"numRecords":N}.
std::string RecordCountStats(int64_t records);

}  // namespace sluice::table

// Checkpoints in the form the protocol allows without Parquet: UUID-named V2-spec JSON
// checkpoints (`N.checkpoint.<uuid>.json`: checkpointMetadata, protocol, metaData, txn, add,
// remove lines), plus the `_last_checkpoint` hint. docs/table.md, "Checkpoints", explains the
// choice and its interop cost (readers must support the v2Checkpoint table feature). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/table/actions.h"
#include "sluice/table/log_store.h"
#include "table_state.h"

namespace sluice::table {

inline constexpr std::string_view kV2CheckpointFeature = "v2Checkpoint";
// The tag of _last_checkpoint naming the checkpoint file, so that opening the latest version
// needs no listing of _delta_log.
inline constexpr std::string_view kCheckpointFileTag = "sluice.checkpointFile";

struct LastCheckpointHint {
  int64_t version = -1;
  int64_t size = 0;  // actions in the checkpoint
  std::optional<int64_t> size_in_bytes;
  std::optional<int64_t> num_of_add_files;
  std::optional<std::string> file;  // kCheckpointFileTag
};

// nullopt when `json` is not a valid hint (it is only a hint: readers then list the log).
std::optional<LastCheckpointHint> ParseLastCheckpoint(std::string_view json);
std::string SerializeLastCheckpoint(const LastCheckpointHint& hint);

struct CheckpointContent {
  std::string text;
  int64_t actions = 0;
  int64_t adds = 0;
};

// The checkpoint of `state`: every live file and txn, and the tombstones removed at or after
// `tombstone_cutoff_ms` (older ones have expired and are dropped).
CheckpointContent BuildCheckpoint(const TableState& state, int64_t tombstone_cutoff_ms);

// The protocol a table needs to hold V2 checkpoints: reader 3 / writer 7 with the
// v2Checkpoint feature, keeping every feature `current` implies (writer 2's appendOnly and
// invariants become named features). Unchanged when `current` already has it.
Protocol ProtocolWithV2Checkpoints(const Protocol& current);

// Writes the V2 JSON checkpoint of `state` (put-if-absent under a fresh UUID name) and points
// _last_checkpoint at it unless that already names a newer one. `state.protocol` must have
// the v2Checkpoint feature (FailedPrecondition otherwise).
Status WriteCheckpoint(LogStore* store, const std::string& root, const TableState& state,
                       int64_t now_ms);

// Table properties (metaData.configuration), with Delta's defaults.
inline constexpr std::string_view kCheckpointIntervalProperty = "delta.checkpointInterval";
// A delta.checkpointInterval value: commits between automatic checkpoints, 0 = never (Spark
// accepts only positive values; 0 is sluice's way to keep a table at reader 1 / writer 2).
// nullopt when it is not a non-negative decimal integer.
std::optional<int64_t> ParseCheckpointInterval(const std::string& value);
// The table's delta.checkpointInterval, else `fallback` (also when the value is malformed: a
// table of another writer still opens and commits).
int64_t CheckpointInterval(const Metadata& metadata, int64_t fallback);
// delta.deletedFileRetentionDuration ("interval 1 week"), in ms; default 7 days.
int64_t DeletedFileRetentionMs(const Metadata& metadata);

}  // namespace sluice::table

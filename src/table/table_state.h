// TableState: the replayed state of one table version (PROTOCOL.md, "Action Reconciliation"),
// built by applying a checkpoint and then commits in version order. Pure: no I/O.
//
// Invariants, once Apply* returned OK:
//  1. No version gaps: a commit is applied only to the state of the version right before it.
//  2. From the first applied version on, `protocol` and `metadata` are set (the latest wins).
//  3. A path is in `files` (live) or in `tombstones` (removed), never in both.
//  4. `txns` holds one entry per appId: the latest version seen.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "sluice/table/actions.h"

namespace sluice::table {

struct TableState {
  int64_t version = -1;  // -1: nothing applied yet
  std::optional<Protocol> protocol;
  std::optional<Metadata> metadata;
  std::map<std::string, AddFile> files;  // live data files, keyed by path as spelled
  std::map<std::string, RemoveFile> tombstones;
  std::map<std::string, Txn> txns;  // by appId
  // The commit timestamp of `version` (ms), monotonized over the commits this state replayed
  // (docs/table.md, "Commit timestamps"); 0 when unknown.
  int64_t timestamp_ms = 0;
  std::optional<CommitInfo> commit_info;  // of `version` (a checkpoint keeps none)
};

// Applies commit `version` (its parsed file; `file_mtime_ms` is the file's modification time,
// 0 if unknown). DataLoss naming `source` for a commit that breaks the protocol (two metaData
// or protocol actions, a first version without both, a version out of order), that holds no
// action (an empty file: every writer writes at least one line) or that is truncated
// (sluice's commitInfo announces more actions than the file holds).
Status ApplyCommit(TableState* state, int64_t version, const ParsedLogFile& commit,
                   int64_t file_mtime_ms, const std::string& source);

// Replaces `state` with a checkpoint's content for `version`. DataLoss naming `source` when
// it lacks protocol or metaData, holds a checkpointMetadata of another version, or refers to
// sidecar files (Parquet, unreadable here).
Status ApplyCheckpoint(TableState* state, int64_t version, const ParsedLogFile& checkpoint,
                       const std::string& source);

// The timestamp a commit is known by: inCommitTimestamp, else commitInfo.timestamp, else the
// file's modification time; then made later than `previous_ms` (1 ms after it when it is not),
// as Spark's history does, so a later commit never has an earlier time.
int64_t CommitTimestamp(const std::optional<CommitInfo>& info, int64_t file_mtime_ms,
                        int64_t previous_ms);

// The commitInfo of a parsed commit, if any.
std::optional<CommitInfo> FindCommitInfo(const ParsedLogFile& commit);

}  // namespace sluice::table

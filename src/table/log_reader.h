// Reading a table's log through a LogStore: the state of a version (checkpoint + commits),
// the commits' provenance (history), and the version at a timestamp. All storage access goes
// through the LogStore; the decisions are made by the pure pieces (BuildLogSegment,
// ApplyCommit, ApplyCheckpoint).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "log_segment.h"
#include "sluice/table/log_store.h"
#include "table_state.h"

namespace sluice::table {

std::string LogDir(const std::string& root);

// How errors name commit `version` read from `path`: "<path> (version N)".
std::string CommitSource(const std::string& path, int64_t version);

// The state at `version` (latest when unset). The latest version is found without listing
// _delta_log when _last_checkpoint names a sluice checkpoint: the commits after it are read
// until the first absent one. A damaged checkpoint is skipped (replay then starts from an
// older one or from version 0); a damaged commit is an error naming its file.
Result<TableState> LoadTableState(LogStore* store, const std::string& root,
                                  std::optional<int64_t> version);

// Reads the commits after `state->version` until the first absent one, applying each.
// Returns how many were applied.
Result<int64_t> CatchUp(LogStore* store, const std::string& root, TableState* state);

// The sorted entries of _delta_log. NotFound "<root> is not a table" when there is no log.
Result<std::vector<LogEntry>> ListLog(LogStore* store, const std::string& root);

// One log file, parsed. NotFound passes through unchanged (callers probe with it).
Result<ParsedLogFile> ReadLogFile(LogStore* store, const std::string& path);

// The log file that put `spelled` (an add's path as the log spells it) into version
// `version`, for errors about that file: "<commit path> (version N)" of the newest commit at
// or below `version` that adds it, else the newest checkpoint at or below `version` (the
// commits before it may have been cleaned up), else "the log of <root>". Reads commits
// newest first until one adds the path: meant for error paths only.
std::string FindAddingLogFile(LogStore* store, const std::string& root, int64_t version,
                              const std::string& spelled);

struct CommitRecord {
  int64_t version = 0;
  int64_t timestamp_ms = 0;  // monotonized (docs/table.md, "Commit timestamps")
  std::optional<CommitInfo> info;
};

// The commits of the log in version order, each with its commitInfo (read from the first
// commitInfo line only). `limit` keeps the newest ones; their timestamps are monotonized over
// the commits read.
Result<std::vector<CommitRecord>> ReadCommits(LogStore* store, const std::string& root,
                                              std::optional<size_t> limit = std::nullopt);

// The latest version whose commit timestamp is at or before `timestamp_ms`. InvalidArgument
// naming the first commit's time when `timestamp_ms` is before it.
Result<int64_t> VersionAtTimestamp(LogStore* store, const std::string& root, int64_t timestamp_ms);

}  // namespace sluice::table

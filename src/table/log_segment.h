// LogSegment: which log files make up one version of a table, chosen from a listing of
// _delta_log (PROTOCOL.md, "Checkpoints": the newest usable checkpoint at or below the
// version, then every commit after it). Pure: the caller lists, this decides.
//
// Invariants of a LogSegment built OK:
//  1. No version gaps: `commits` are consecutive, from checkpoint version + 1 (or 0) to
//     `version`.
//  2. `checkpoint`, when set, is one this code can read (a JSON V2 checkpoint) and is not
//     newer than `version`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "log_path.h"
#include "sluice/base/status.h"

namespace sluice::table {

struct LogEntry {
  LogPath path;
  int64_t modification_time_ms = 0;
};

struct LogSegment {
  int64_t version = -1;
  std::optional<LogEntry> checkpoint;
  std::vector<LogEntry> commits;
};

// `listing`: the entries of _delta_log sorted by name (any kinds; only commits and
// checkpoints are used). `target`: the version wanted, or the latest when unset. `skip`:
// checkpoint file names not to use (found damaged by an earlier attempt).
// Errors: NotFound "<log_dir>: no commits (not a Delta table)" or "version N does not exist
// (latest is M)"; DataLoss naming the missing commit for a gap; Unimplemented when the
// version can be reached only through a Parquet checkpoint.
Result<LogSegment> BuildLogSegment(const std::vector<LogEntry>& listing,
                                   std::optional<int64_t> target, const std::string& log_dir,
                                   const std::vector<std::string>& skip = {});

}  // namespace sluice::table

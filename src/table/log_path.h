// The names of the files in a table's _delta_log directory, parsed in one place
// (PROTOCOL.md, "Delta Log Entries", "Checkpoints", "Log Compaction Files"). Versions are
// exactly 20 decimal digits; anything that does not match a known pattern (temp files of
// writers, editor backups, `_staged_commits/`, `.crc` files) is kind kOther and never read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::table {

inline constexpr std::string_view kLogDirName = "_delta_log";
inline constexpr std::string_view kLastCheckpointName = "_last_checkpoint";

enum class LogFileKind {
  kCommit,               // 00000000000000000012.json
  kClassicCheckpoint,    // 00000000000000000012.checkpoint.parquet
  kMultiPartCheckpoint,  // 00000000000000000012.checkpoint.0000000001.0000000003.parquet
  kUuidCheckpoint,       // 00000000000000000012.checkpoint.<uuid>.json|parquet (V2 spec)
  kCompaction,           // 00000000000000000004.00000000000000000006.compacted.json
  kChecksum,             // 00000000000000000012.crc
  kLastCheckpoint,       // _last_checkpoint
  kOther,                // anything else: ignored
};

struct LogPath {
  LogFileKind kind = LogFileKind::kOther;
  std::string name;          // the file name inside _delta_log
  int64_t version = -1;      // the version (compaction: the first version)
  int64_t end_version = -1;  // compaction: the last version
  int32_t part = 0;          // multi-part checkpoint: part (1-based) of `parts`
  int32_t parts = 0;
  bool json = false;  // UUID checkpoint: JSON (readable here) rather than Parquet

  bool is_checkpoint() const {
    return kind == LogFileKind::kClassicCheckpoint || kind == LogFileKind::kMultiPartCheckpoint ||
           kind == LogFileKind::kUuidCheckpoint;
  }
};

// Classifies a file name (no directory part).
LogPath ParseLogPath(std::string_view name);

// "00000000000000000012": the 20-digit zero-padded version.
std::string VersionPrefix(int64_t version);
// "00000000000000000012.json"
std::string CommitFileName(int64_t version);
// "00000000000000000012.checkpoint.<uuid>.json"
std::string UuidCheckpointFileName(int64_t version, std::string_view uuid);

}  // namespace sluice::table

// Pieces every `sluice` command shares: exit codes, error lines, path resolution through
// io::FileSystemFor, and the output options of the `convert` commands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/base/status.h"
#include "sluice/format/shard_writer.h"
#include "sluice/io/file_system.h"

namespace sluice::cli {

// Exit codes of every command (docs/cli.md).
inline constexpr int kExitOk = 0;       // done; also when some inputs were skipped (warned)
inline constexpr int kExitFailure = 1;  // an error, or `verify` found faults
inline constexpr int kExitUsage = 2;    // the command line itself is wrong

// "sluice: error: <message>" on stderr; returns kExitFailure.
int ReportError(const Status& status);
// "sluice: warning: <message>" on stderr.
void Warn(const std::string& message);

// A user's path or URI resolved to a file system and the path inside it. With the test-only
// environment variable SLUICE_FAULT_INJECTION set, the file system is wrapped in an
// io::FaultInjectionFileSystem following its plan (docs/cli.md, "Testing"), and the counts
// of changing operations are printed on stderr at exit.
struct Location {
  io::FileSystem* fs = nullptr;
  std::string path;
};
Result<Location> Locate(const std::string& uri);

// Options shared by the `convert` commands: where and how shards are written.
struct OutputOptions {
  std::string codec = "zstd";        // Default: zstd
  std::string shard_size = "100MB";  // Default: 100 MB of file bytes per shard
  std::string prefix = "data";       // Default: "data" -> data-<run>-00000.tfrecord.zst
  bool overwrite = false;            // Default: refuse an OUT that holds a dataset
};
void AddOutputOptions(CLI::App* command, OutputOptions* options);

// Opens a ShardWriter into `out` (created if missing) per `options`; `command` names the
// writer in the directory's lock ("sluice convert jsonl"). Reports on stderr the leftovers
// of interrupted runs it reclaimed.
Result<std::unique_ptr<format::ShardWriter>> OpenShardWriter(const Location& out,
                                                             const OutputOptions& options,
                                                             const std::string& command);

// "sluice: warning: reclaimed N file(s) in DIR left by interrupted runs (...)", if any.
void ReportReclaimed(const std::string& dir, const std::vector<format::Leftover>& reclaimed);

// CLI11 validators for sizes ("100MB", "1.5GiB") and codec names.
const CLI::Validator& ByteSizeValidator();
const CLI::Validator& CodecValidator();

}  // namespace sluice::cli

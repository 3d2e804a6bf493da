// LogStore: the only storage a table's transaction log touches (docs/table.md, "Storage").
// The log code (replay, commits, checkpoints) does no I/O of its own; it calls these six
// methods, each of which states what it promises. NewFileSystemLogStore implements them over
// any io::FileSystem (local disk: link(2); S3: If-None-Match: *; memory: a lock), so the
// same log code runs on every store, and tests inject faults by wrapping a store.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::table {

struct LogFileMeta {
  std::string path;  // full path, as passed to the store
  uint64_t size = 0;
  int64_t modification_time_ms = 0;  // 0 when the store does not know it
};

// Threading: every method may be called concurrently, from any thread or process.
class LogStore {
 public:
  virtual ~LogStore() = default;

  // The files (not directories) directly inside `dir` whose names sort after `start_after`
  // (every file when it is empty), sorted by name in byte order. NotFound when `dir` does not
  // exist. Promise: a file whose PutIfAbsent returned OK before this call began is listed.
  virtual Result<std::vector<LogFileMeta>> List(const std::string& dir,
                                                std::string_view start_after) = 0;

  // The whole content of `path`. NotFound when absent. Promise: the bytes of one complete
  // PutIfAbsent or Put, never part of one.
  virtual Result<std::string> Read(const std::string& path) = 0;

  // Creates `path` holding `data` only if nothing exists there: AlreadyExists otherwise, and
  // then nothing changed. Of concurrent calls for one path exactly one returns OK. Promise:
  // after OK, every later Read, Head and List in any process sees the whole file. Any other
  // error leaves the outcome unknown (a timeout after the store kept the bytes): the caller
  // reads the path back to learn it.
  virtual Status PutIfAbsent(const std::string& path, std::string_view data) = 0;

  // Replaces `path` atomically: readers see the old bytes or the new, never a mix. Only for
  // hints that may be lost or stale (_last_checkpoint), never for commits.
  virtual Status Put(const std::string& path, std::string_view data) = 0;

  // Size and modification time of `path`. NotFound when absent.
  virtual Result<LogFileMeta> Head(const std::string& path) = 0;

  // Removes `path`. Idempotent: OK when it is already absent.
  virtual Status Delete(const std::string& path) = 0;
};

// A LogStore over `fs` (not owned; must outlive the store). PutIfAbsent maps to
// FileSystem::PutIfAbsent, Put to a write of a temporary plus rename, List to
// FileSystem::List filtered after `start_after` (the whole directory is listed: a store with
// ranged listings can implement LogStore directly).
std::unique_ptr<LogStore> NewFileSystemLogStore(io::FileSystem* fs);

}  // namespace sluice::table

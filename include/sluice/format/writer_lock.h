// WriterLock: at most one writer at a time publishes into a dataset directory, and a second
// one is refused before it writes anything (docs/manifest.md, "Concurrent writers").
//
// The lock is a tiny log of put-if-absent entries, `<dir>/.sluice-lock.<N>`, so that it works
// wherever FileSystem::PutIfAbsent does (local disk, NFS, S3):
//  1. The entry with the highest N is the lock's state: an acquire entry (run id, pid, host,
//     start time, command) means held, a release entry means free, no entry means free.
//  2. To acquire, a writer puts entry N+1 (N = the highest it saw) with put-if-absent, then
//     lists again: it holds the lock only if no higher entry exists. Of writers racing for one
//     N exactly one wins; a slow writer whose N+1 lands below a newer entry backs off.
//  3. Entries are deleted only below a higher one; the highest is never deleted, only
//     superseded, so lock numbers only grow and a slow writer cannot reuse a freed number to
//     pass a newer holder. Release puts a release entry N+1, then deletes the entries below.
//  4. Stale rule: an acquire entry whose process is certainly gone (same host, pid no longer
//     running, or running with another start time) may be superseded like a release entry;
//     the taker reclaims the dead run's files. An entry from another host is never judged
//     stale: it is broken only on request (`sluice clean --break-lock`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

// The process a lock entry names.
struct WriterIdentity {
  int64_t pid = 0;
  std::string host;
  uint64_t start_ticks = 0;  // the process's start time (/proc/<pid>/stat), 0 when unknown
};

// Who this process is, and whether a process named in a lock still runs. Injected so that
// tests can play dead writers and other hosts.
// Threading: all methods may be called from any thread.
class ProcessProbe {
 public:
  virtual ~ProcessProbe() = default;
  virtual WriterIdentity Self() const = 0;
  // True only when `who` certainly runs no more: on this host, with no process `who.pid`, a
  // zombie (exited, not yet reaped), or one that started at another time (the pid was reused).
  virtual bool IsGone(const WriterIdentity& who) const = 0;
};
ProcessProbe* ThisProcess();  // the real one (getpid, gethostname, kill(pid, 0), /proc)

// One entry of the lock log.
struct LockEntry {
  uint64_t number = 0;
  bool released = false;  // a release entry: the lock is free
  std::string run;        // the run that acquired (or released) the lock
  WriterIdentity writer;  // acquire entries
  std::string started;    // acquire time, ISO 8601 UTC
  std::string command;    // e.g. "sluice convert jsonl"

  std::string ToJson() const;
  static Result<LockEntry> FromJson(std::string_view json, const std::string& source);
  // "run 3f9a2c1b7d04 (sluice convert jsonl), pid 4711 on host node7, since 2025-...Z"
  std::string Describe() const;
};

struct WriterLockOptions {
  std::string run;                // required: the run id of the writer
  std::string command;            // Default: "" (shown to other writers refused by this lock)
  ProcessProbe* probe = nullptr;  // Default: ThisProcess()
  // Also take over a lock held by a process on another host (its liveness is unknowable
  // here). Default: false.
  bool break_foreign = false;
};

// Threading: not thread-safe; one owner.
class WriterLock {
 public:
  static constexpr const char* kFilePrefix = ".sluice-lock.";

  // Acquires the lock of `dir` (which must exist). FailedPrecondition naming the holder
  // when another live writer holds it, or one on another host.
  static Result<std::unique_ptr<WriterLock>> Acquire(io::FileSystem* fs, const std::string& dir,
                                                     const WriterLockOptions& options);
  // The lock's state: the highest entry of the log in `dir` (nullopt: no entry). With
  // `numbers`, also every entry number present, ascending.
  static Result<std::optional<LockEntry>> ReadState(io::FileSystem* fs, const std::string& dir,
                                                    std::vector<uint64_t>* numbers = nullptr);
  // Path of entry `number` in `dir`; whether a file name (not a path) is a lock entry.
  static std::string EntryPath(const std::string& dir, uint64_t number);
  static bool IsEntryName(std::string_view name, uint64_t* number = nullptr);

  ~WriterLock();  // releases if Release() was not called (best effort)
  // Puts the release entry and deletes the entries below it. Calling it twice returns the
  // first result.
  Status Release();

  const LockEntry& entry() const { return entry_; }
  // The acquire entry of a dead writer this lock superseded (its run's files are leftovers).
  const std::optional<LockEntry>& taken_over() const { return taken_over_; }

 private:
  WriterLock(io::FileSystem* fs, std::string dir, LockEntry entry,
             std::optional<LockEntry> taken_over)
      : fs_(fs),
        dir_(std::move(dir)),
        entry_(std::move(entry)),
        taken_over_(std::move(taken_over)) {}

  io::FileSystem* fs_;
  std::string dir_;
  LockEntry entry_;
  std::optional<LockEntry> taken_over_;
  std::optional<Status> released_;
};

}  // namespace sluice::format

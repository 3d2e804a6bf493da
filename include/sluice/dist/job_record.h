// JobRecord: the resumable state of one job writing OUT (docs/dist.md, "Resuming convert"),
// private to that job: OUT/.sluice-job/<identity hash>/, where the hash is XXH3-128 of the
// job's identity (its command, options and inputs). Jobs of other identities writing the same
// OUT (concurrent appends to one table) have directories of their own and never touch this
// one. Inside it:
//  - `.sluice-lock.N`: a format::WriterLock naming the run that owns the record (pid, host,
//    start time), taken with put-if-absent: of two live runs of the same job exactly one owns
//    it, the other is refused naming the owner. A dead owner's lock is taken over (the stale
//    rule of writer_lock.h), which is how a rerun resumes;
//  - `job.json` (identity, run id, task count), `tasks.bin` (the task list), and one file per
//    committed task, written by the owner.
// Only the owner deletes its record (when the job publishes or fails cleanly). The record of a
// dead job stays for its rerun, until FindDeadJobRecords names it to `sluice clean`, `sluice
// table vacuum` or the next job publishing a dataset directory (whose lock already reclaims
// the dead run's shards, so its record could resume nothing).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/task.h"
#include "sluice/format/dataset_publisher.h"
#include "sluice/format/writer_lock.h"
#include "sluice/io/file_system.h"

namespace sluice::dist {

// Threading: not thread-safe; one owner (rank 0 of the job).
class JobRecord {
 public:
  static constexpr const char* kRootDir = ".sluice-job";

  // The record's directory for `identity`, relative to OUT: ".sluice-job/<32 hex digits>".
  static std::string DirFor(const std::string& identity);

  // Takes the record of the job `identity` in OUT = `out_dir` (creating it). Its run is the
  // one an earlier run of the job recorded, else a new run id. FailedPrecondition naming the
  // owner when another live run of the same job owns it (or one on another host).
  static Result<std::unique_ptr<JobRecord>> Acquire(io::FileSystem* fs, const std::string& out_dir,
                                                    const std::string& identity,
                                                    const std::string& command,
                                                    format::ProcessProbe* probe = nullptr);
  ~JobRecord();  // without Remove: releases the lock and keeps the record for a rerun

  const std::string& run() const { return run_; }
  // Whether an earlier run of this job recorded the run (and maybe tasks) to go on with.
  bool resuming() const { return resuming_; }
  // Path of a file of the record.
  std::string Path(const std::string& name) const;
  static std::string TaskFileName(TaskId task);

  // Starts the record afresh: deletes what the record holds (but its lock), then writes the
  // task list (`tasks` of them, encoded by the job) and job.json.
  Status Start(uint64_t tasks, const std::string& task_list);
  // The task list an earlier run recorded.
  Result<std::string> LoadTaskList() const;
  // Deletes the record, then releases and deletes its lock. Idempotent.
  void Remove();

 private:
  JobRecord(io::FileSystem* fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}
  void DeleteRecordFiles();

  io::FileSystem* const fs_;
  const std::string dir_;  // OUT/.sluice-job/<hash>
  std::string identity_hash_;
  std::string run_;
  bool resuming_ = false;
  std::unique_ptr<format::WriterLock> lock_;
};

// The records in OUT = `out_dir` that no live run owns: a lock whose holder is gone (same
// host), released, or absent, and files of an older layout directly in .sluice-job/. A
// record held on another host is never named (its liveness is unknowable here). Each path is
// a file or a record's directory (delete it with DeleteJobRecordTree).
Result<std::vector<format::Leftover>> FindDeadJobRecords(io::FileSystem* fs,
                                                         const std::string& out_dir,
                                                         format::ProcessProbe* probe = nullptr);
// Deletes a file, or a directory with everything under it (object stores: every object).
void DeleteJobRecordTree(io::FileSystem* fs, const std::string& path);

}  // namespace sluice::dist

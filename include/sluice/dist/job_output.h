// JobOutput: the dataset a distributed job writes, published once (docs/dist.md,
// "Publication and faults"), through issue 13's commit point (format/dataset_publisher.h):
//  1. Rank 0 begins the publication of OUT: the directory's writer lock, a published dataset
//     refused unless overwriting, dead runs' leftovers reclaimed.
//  2. Every rank writes its tasks' shards straight into OUT with a part writer
//     (ShardWriterOptions::run_id = the job's run, part = the task attempt), under names
//     final from the start: "<prefix>-<run>-t000012a0-00000.tfrecord.zst".
//  3. Rank 0 publishes dataset.json listing the committed attempts' shards in task order
//     (shard names and count decided once, there), after deleting the run's other files
//     (losing speculative copies, attempts cut short). Before that point readers see no
//     dataset; a failed job deletes every file of its run.
// Resuming: with an `identity` (what makes two runs the same job: the command's options and
// its inputs), the job's own record OUT/.sluice-job/<identity hash>/ (dist/job_record.h)
// records the run id, the task list and each committed task's output as it is committed. A run
// killed at any moment (a rank killed, Ctrl-C of mpirun) leaves it behind; rerunning the same
// command Begins with the same run id (so its files are not leftovers), keeps the recorded tasks
// whose shards are intact and converts only the others, then publishes once. A keyed job (dedup,
// reshard) records its map tasks' outputs instead (dist/derived_job.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sluice/dist/job_record.h"
#include "sluice/dist/task.h"
#include "sluice/dist/transport.h"
#include "sluice/format/dataset_publisher.h"
#include "sluice/format/manifest.h"
#include "sluice/format/shard_writer.h"
#include "sluice/io/file_system.h"
#include "sluice/table/table.h"

namespace sluice::dist {

struct JobOutputOptions {
  format::ShardWriterOptions shards;  // codec, target size, prefix (run_id and part are set here)
  bool overwrite = false;             // replace a published dataset at the commit point
  std::string command;                // names the writer in the lock ("sluice convert jsonl")
  // What makes two runs the same job; "" = no resuming (no job directory).
  std::string identity;
  // OUT is a sluice table (docs/table.md): the commit point appends the shards as one table
  // commit (txn "sluice-job-<run>") instead of publishing dataset.json; created if absent.
  bool table = false;
  // With `table`: the commit replaces every file of the table's latest version (a Delta
  // overwrite: older versions stay readable) instead of appending.
  bool table_overwrite = false;
};

// One task's committed output: its shards (paths relative to OUT) and the job's own small
// result for it (counts, schema, notes).
struct TaskOutput {
  std::vector<format::ManifestShard> shards;
  std::string result;

  std::string Encode() const;  // JSON
  static Result<TaskOutput> Decode(std::string_view text, const std::string& source);
};

class JobOutput {
 public:
  // Collective. `tasks`: rank 0's plan (ignored on the other ranks); on return, on every rank,
  // the job's tasks: those an interrupted run of the same job recorded, else the plan.
  // OUT is `dir` on `fs`.
  static Result<std::unique_ptr<JobOutput>> Open(Transport* transport, io::FileSystem* fs,
                                                 const std::string& dir,
                                                 const JobOutputOptions& options,
                                                 std::vector<TaskSpec>* tasks);
  ~JobOutput();  // rank 0: without Publish, as Abort()

  const std::string& run_id() const { return run_; }
  io::FileSystem* fs() const { return fs_; }
  const std::string& dir() const { return dir_; }
  // Every rank: the job's record directory relative to OUT ("" without an identity).
  const std::string& job_dir() const { return job_dir_; }

  // Every rank: whether an interrupted run of this job committed `task` (it is reused).
  bool Reused(TaskId task) const { return reused_.count(task) != 0; }
  size_t reused_count() const { return reused_.size(); }
  // Files of dead runs deleted at Open (rank 0).
  const std::vector<format::Leftover>& reclaimed() const;

  // Any rank: a writer of one part of the run (a task attempt): its shards are OUT's files
  // "<prefix>-<run>-<part>-NNNNN...", listed by the writer's manifest() after Close.
  Result<std::unique_ptr<format::ShardWriter>> OpenPart(const std::string& part) const;

  // Rank 0: `task`'s committed output; recorded in the job directory when resuming is on.
  Status Record(TaskId task, TaskOutput output);
  // Rank 0: the output of `task` (recorded or reused), or null.
  const TaskOutput* Output(TaskId task) const;
  // Rank 0: a whole file of the run in OUT ("<stem>-<run><ext>"), e.g. a class list; returns
  // its name for the manifest's metadata.
  Result<std::string> WriteSideFile(std::string_view stem, std::string_view extension,
                                    ByteView data);

  // Rank 0, the commit point: publishes `manifest` with every task's shards (0..tasks-1, in
  // order) after deleting the run's files it does not list; then removes the job's record.
  // Every task must have an output.
  Status Publish(uint64_t tasks, format::Manifest manifest, format::Manifest* published);
  // Rank 0, the commit point with the given outputs, in task order, rather than the recorded
  // ones: a keyed job records its map tasks' outputs, then writes its output shards once every
  // map task is done.
  Status Publish(const std::vector<TaskOutput>& outputs, format::Manifest manifest,
                 format::Manifest* published);
  // Rank 0: deletes every file of the run and the job directory, releases the lock.
  void Abort();
  // Rank 0, after a Publish into a table: the commit (its version; `duplicate` when a rerun
  // found this run committed already). Empty for a dataset directory.
  const std::optional<table::CommitResult>& table_commit() const { return table_commit_; }

 private:
  JobOutput() = default;
  Status BeginOnRank0(const JobOutputOptions& options, std::vector<TaskSpec>* tasks);
  Status LoadJobRecord(std::vector<TaskSpec>* tasks);
  void RemoveJobDir();
  Status CommitToTable(const format::Manifest& manifest);

  io::FileSystem* fs_ = nullptr;
  std::string dir_;
  std::string run_;
  std::string job_dir_;                // relative to dir_; "" = no record
  std::unique_ptr<JobRecord> record_;  // rank 0, with an identity, until Publish or Abort
  format::ShardWriterOptions shard_options_;
  bool table_ = false;
  bool table_overwrite_ = false;
  std::optional<table::CommitResult> table_commit_;      // rank 0, after Publish (table_)
  bool open_ = false;                                    // rank 0: begun, not yet ended
  std::unique_ptr<format::DatasetPublisher> publisher_;  // rank 0, unless table_
  std::map<TaskId, TaskOutput> outputs_;                 // rank 0
  std::set<TaskId> reused_;                              // every rank
};

// The tasks of `tasks` that are not reused, renumbered 0..m-1, and their original ids.
std::vector<TaskSpec> TasksToRun(const JobOutput& out, const std::vector<TaskSpec>& tasks,
                                 std::vector<TaskId>* original);

}  // namespace sluice::dist

// A conversion across the ranks of a job (`mpirun -np N sluice convert ...`, docs/dist.md,
// "convert under MPI"): the inputs are tasks handed out as ranks become free (with
// speculation and retries, task_runner.h); each attempt converts its task into shards of
// its own (a part of the job's run, job_output.h); rank 0 publishes ONE dataset listing the
// committed attempts' shards in task order, equal as a multiset of records to what one
// process writes. A rerun after an interruption converts only the tasks not yet committed.
//
// What a record is made of stays in the command (src/cli/): it implements TaskConverter.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sluice/dist/job_output.h"
#include "sluice/dist/jobs.h"
#include "sluice/dist/task_runner.h"
#include "sluice/format/shard_writer.h"

namespace sluice::dist {

class TaskConverter {
 public:
  virtual ~TaskConverter() = default;
  // Once per rank before its first task; an error on any rank fails the job with it.
  virtual Status Start() { return Status::OK(); }
  // Converts `task`'s input into `out` (this attempt's part writer; the caller closes it)
  // and returns what rank 0 needs of it (counts, schema, notes) as a small result. `hint` is
  // "" or what Revise asked for this task. `cancel` is set when another copy of the task was
  // committed: return promptly (any error will do). Threading: one call at a time per rank.
  virtual Result<std::string> Convert(const TaskSpec& task, const std::string& hint,
                                      format::ShardWriter* out, const io::CancelToken& cancel) = 0;
  // Rank 0, once every task has a committed result (`results`, in task order): the tasks to
  // convert again, with a hint each (e.g. JSON lines: the feature types the earlier tasks
  // fixed, so that every task types its fields as one process reading the inputs in order
  // would). Called again after each round, until it asks for nothing. Default: nothing.
  virtual Result<std::map<TaskId, std::string>> Revise(const std::vector<std::string>& results) {
    (void)results;
    return std::map<TaskId, std::string>();
  }
  // Rank 0, after the last round: the features and metadata of the dataset to publish (side
  // files, e.g. a class list, written through `out`).
  virtual Status Finish(const std::vector<std::string>& results, JobOutput* out,
                        format::Manifest* manifest) = 0;
};

struct ConvertJobOptions {
  JobOutputOptions output;  // how OUT is written and published; `identity` enables resuming
  TaskRunnerOptions tasks;  // scheduling policies, faults, progress of rank 0
};

struct ConvertJobResult {
  format::Manifest manifest;         // rank 0: the dataset published
  std::vector<std::string> results;  // rank 0: each task's result, in task order
  uint64_t tasks = 0;
  uint64_t reused = 0;   // tasks an interrupted run of the same job had committed
  uint64_t redone = 0;   // task conversions Revise asked for
  JobProgress progress;  // of the first round
  std::vector<format::Leftover> reclaimed;  // rank 0: dead runs' files deleted at the start
  // Rank 0, into a table: the version committed (or, for a rerun of a run committed already,
  // the table's version then, with table_commit_duplicate). -1 for a dataset directory.
  int64_t table_version = -1;
  bool table_commit_duplicate = false;
};

// Collective. OUT is `dir` on `fs`. `tasks`: rank 0's plan (ids 0..n-1; ignored on the other
// ranks), replaced by an interrupted run's own when the identity matches. Every rank returns
// the same status; on failure nothing is published and the run's files are deleted.
Result<ConvertJobResult> RunConvertJob(Transport* transport, io::FileSystem* fs,
                                       const std::string& dir, std::vector<TaskSpec> tasks,
                                       TaskConverter* converter, const ConvertJobOptions& options);

// "t000012a0" (round 0) or "t000012r1a0": the part tag of an attempt's shards.
std::string AttemptPart(TaskId task, int round, int attempt);

}  // namespace sluice::dist

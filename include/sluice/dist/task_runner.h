// TaskRunner: runs a list of tasks across the ranks of a Transport, with the Scheduler
// deciding who runs what. Rank 0 coordinates (and also works, in a thread of its own); the
// other ranks are workers. Every rank calls Run with the same tasks, as a collective.
//
// Protocol (docs/dist.md): a worker announces itself (or why it could not start); the
// coordinator sends assignments and cancellations; a worker answers every assignment with a
// report, a result or an error tagged with its rank and host; the coordinator ends the phase
// once every task has a committed attempt, with a stop message carrying the outcome to every
// worker, so every rank returns the same status (one reason for a failed job) and knows which
// attempt of each task was committed. The coordinator waits for no worker to end a phase: a
// frozen rank's attempt (a losing copy by then) holds nothing, and the frozen rank learns the
// outcome when it wakes, stops its attempt and discards its output.
// Polling uses non-blocking receives with a backoff that resets on progress (mpi4py.futures).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/clock.h"
#include "sluice/dist/scheduler.h"
#include "sluice/dist/transport.h"
#include "sluice/io/file_system.h"

namespace sluice::dist {

// What the ranks do with tasks. Threading: Start is called on the thread calling Run; Run
// on a thread of its own, one task at a time per rank.
class TaskHandler {
 public:
  virtual ~TaskHandler() = default;
  // Once per rank before any task (open a tokenizer, check an output). An error on any rank
  // fails the whole job with that reason.
  virtual Status Start() { return Status::OK(); }
  // Runs one attempt and returns its (small) result for rank 0. `cancel` is set when another
  // copy of the task has been committed: return promptly (any error will do).
  virtual Result<std::string> Run(const TaskSpec& task, int attempt,
                                  const io::CancelToken& cancel) = 0;
};

// Test-only faults (the CLI sets them from SLUICE_FAULT_* variables, docs/dist.md): they
// slow attempts down, cancellably, after the handler has run them.
struct FaultOptions {
  int64_t slow_task = -1;        // attempt 0 of this task (its input order) ...
  double slow_task_seconds = 0;  // ... sleeps this long
  Rank slow_rank = -1;           // this rank ...
  double slow_rank_factor = 1;   // ... takes this factor longer for every attempt
};

struct TaskRunnerOptions {
  SchedulerOptions scheduler;
  FaultOptions faults;
  const Clock* clock = nullptr;        // Default: SteadyClock()
  double backoff_max_seconds = 0.005;  // Default: 5 ms, the longest idle sleep between polls
  // Rank 0: called at most every `progress_interval` seconds, and once at the end.
  std::function<void(const JobProgress&, double elapsed_seconds)> on_progress;
  double progress_interval = 1.0;  // Default: 1 s
  // Rank 0: called with each committed task's result, as it is committed.
  std::function<void(TaskId, const std::string& result)> on_commit;
};

struct TaskRunResult {
  std::vector<std::string> results;  // rank 0 only: each task's committed result
  std::vector<Rank> committed_rank;  // every rank: who ran each task's committed attempt
  std::vector<int> committed_attempt;
  JobProgress progress;  // rank 0 only
};

class TaskRunner {
 public:
  TaskRunner(Transport* transport, TaskRunnerOptions options);
  // Collective. `tasks` have ids 0..n-1, the same on every rank. Returns the same status on
  // every rank: OK, or the one reason the job failed.
  Result<TaskRunResult> Run(const std::vector<TaskSpec>& tasks, TaskHandler* handler);

 private:
  Result<TaskRunResult> Coordinate(const std::vector<TaskSpec>& tasks, TaskHandler* handler);
  // A worker's loop until the stop message; `outcome`, `result`: what that message said.
  Status Work(const std::vector<TaskSpec>& tasks, TaskHandler* handler, Status* outcome,
              TaskRunResult* result);

  Transport* transport_;
  TaskRunnerOptions options_;
  uint64_t phase_ = 0;  // Run calls so far: messages of an earlier phase are dropped
};

// "rank 3 on node7: <message>", same code.
Status TagWithRank(const Status& error, Rank rank, const std::string& host);

// Collective: every rank passes its own status and gets the same one back, OK or the error of
// the lowest failed rank, tagged with its rank and host. What jobs call after a step that
// each rank does alone (writing its shards), so that no rank goes on while another failed.
Status AgreeOnStatus(Transport* transport, const Status& mine);

// Rank 0's `data` on every rank, sent point to point: unlike Broadcast, rank 0 returns at once
// and never waits for a rank that does not answer (a frozen rank reads it when it wakes); the
// other ranks wait for it. For what rank 0 alone decides between phases and at the end of a
// job that writes shared storage (convert), so a frozen rank cannot hold publication hostage.
Result<std::string> Announce(Transport* transport, std::string data,
                             double backoff_max_seconds = 0.005);
// Announce of rank 0's status (`rank0`, ignored elsewhere): the same status on every rank.
Status AnnounceStatus(Transport* transport, const Status& rank0);

// The end of a job's conversation: every other rank tells rank 0 it is done (after its last
// Announce, with nothing left to write) and returns; rank 0 waits at most `wait_seconds` and
// returns the ranks that did not answer (frozen, or lost), an empty list when all did. Rank 0
// may call MPI_Finalize (which waits for every rank) only after an empty answer.
Result<std::vector<Rank>> EndJob(Transport* transport, double wait_seconds);

}  // namespace sluice::dist

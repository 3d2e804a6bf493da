// Scheduler: the coordinator's bookkeeping of a distributed job, pure and single-threaded.
//
// It keeps three named collections, as mpi4py.futures' pool does: idle workers, queued
// tasks and in-flight attempts, and pairs a worker with a task only when it has both
// (Schedule). Workers report every attempt back, finished or failed; a failed attempt fails
// its task (after the retry policy), a worker that cannot start fails the whole job with
// one reason. On top of that bookkeeping sit three policy objects (policies.h): locality
// (Spark's delay scheduling), speculative copies of stragglers, and retries.
//
// It does no I/O and reads time only from the Clock it is given, so the same code runs a real
// job (dist/task_runner.h drives it over a Transport) and the 1,000-rank simulation
// (dist/simulation.h), and tests script worker events on a FakeClock (docs/dist.md).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/clock.h"
#include "sluice/dist/policies.h"
#include "sluice/dist/task.h"

namespace sluice::dist {

struct SchedulerOptions {
  SpeculationOptions speculation;
  LocalityOptions locality;
  RetryOptions retry;
  // Ranks the job has (0: unknown). Once that many workers joined, a task whose input only
  // nodes without a rank hold fails the job instead of waiting for them forever.
  size_t workers = 0;
};

// A snapshot for the progress line and the job summary.
struct JobProgress {
  uint64_t tasks = 0, committed = 0, running = 0, queued = 0;
  uint64_t input_bytes = 0, committed_bytes = 0;
  uint64_t stragglers = 0;          // running tasks past the straggler threshold now
  uint64_t speculative_copies = 0;  // launched so far
  uint64_t speculative_wins = 0;    // tasks whose committed output came from a copy
  uint64_t local_launches = 0, remote_launches = 0;
};

// Threading: not thread-safe; one coordinator thread owns it.
class Scheduler {
 public:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  // `tasks` must have ids 0..n-1 in input order.
  Scheduler(std::vector<TaskSpec> tasks, const Clock* clock, SchedulerOptions options = {});

  // A worker has started and is idle; `host` is its node, for locality.
  void AddWorker(Rank rank, const std::string& host);
  // A worker could not start: the job fails with `error` (the first such reason is kept).
  void WorkerStartFailed(Rank rank, const Status& error);

  // Attempt (task, attempt) on `rank` finished: its worker is idle again, and its output is
  // committed if it is the first copy of the task to finish, discarded otherwise.
  Outcome TaskFinished(Rank rank, TaskId task, int attempt);
  // Attempt failed with `error` (the worker has tagged it with rank and host). The worker is
  // idle again. The task runs again if the retry policy says so and no other copy is
  // running; otherwise the job fails with `error`. A copy of a committed task failing (or
  // cancelled) changes nothing.
  void TaskFailed(Rank rank, TaskId task, int attempt, const Status& error);

  // Pairs idle workers with tasks: queued tasks first (locality policy), then speculative
  // copies of stragglers on workers left idle. The caller sends each assignment.
  std::vector<Assignment> Schedule();
  // In-flight attempts of tasks already committed by another copy: the caller asks their
  // workers to stop (they still report, and their output is discarded). Each is returned once.
  std::vector<Assignment> TakeCancellations();

  // The earliest time at which Schedule() may decide something new without any event (the
  // locality wait running out, a running task becoming a straggler); kNever when none.
  double NextDecisionTime() const;

  // Every task has a committed attempt. Attempts still running then are losing copies, being
  // cancelled: the job does not wait for them (a frozen rank's attempt never answers), as
  // Spark's driver commits the job while a slow executor's attempt still runs. Their workers
  // discard their output when they learn the outcome (task_runner.h).
  bool finished() const { return committed_ == tasks_.size(); }
  bool failed() const { return !failure_.ok(); }
  const Status& failure() const { return failure_; }
  JobProgress Progress() const;
  // For each task, the rank whose attempt was committed (-1 until then).
  const std::vector<Rank>& committed_ranks() const { return committed_rank_; }
  const std::vector<int>& committed_attempts() const { return committed_attempt_; }

 private:
  enum class State { kQueued, kRunning, kCommitted, kFailed };
  struct TaskState {
    State state = State::kQueued;
    int attempts = 0;  // started so far
    int failures = 0;
    int running = 0;             // copies in flight
    bool local_capable = false;  // some worker's host holds the input
  };
  struct InFlight {
    Rank rank = 0;
    double started = 0;
    bool speculative = false;
    bool cancel_sent = false;
  };
  using AttemptKey = std::pair<TaskId, int>;

  // The queued tasks, indexed by host as Spark's pending-task lists are: per host, no
  // preference, all. Entries are removed lazily (a task popped from one list stays in the
  // others until it is met there and skipped).
  class Queue {
   public:
    void Push(const TaskSpec& task);
    // The first queued task in `list` (skipping stale entries), or -1.
    int64_t Pop(std::deque<TaskId>* list, const std::vector<TaskState>& states);
    std::deque<TaskId>* ForHost(const std::string& host);
    std::deque<TaskId>* NoPreference() { return &no_preference_; }
    std::deque<TaskId>* All() { return &all_; }

   private:
    std::unordered_map<std::string, std::deque<TaskId>> by_host_;
    std::deque<TaskId> no_preference_, all_;
  };

  int64_t PickQueued(Rank rank, double now, bool* local);
  // Running tasks past the straggler threshold with no copy yet, longest-running first
  // (as attempts: the rank running each).
  std::vector<Assignment> Stragglers(double now) const;
  void Launch(Rank rank, TaskId task, bool speculative, bool local, double now,
              std::vector<Assignment>* out);
  void Requeue(TaskId task);
  void Fail(const Status& error);
  // With every expected worker joined: fails the job for a task only absent nodes can run.
  void CheckOnlyOnHostsRunnable();
  // Removes the attempt from in_flight_ and makes its worker idle; false if unknown.
  bool Retire(Rank rank, TaskId task, int attempt, InFlight* attempt_out);
  double StragglerThreshold() const;
  bool IsLocal(const TaskSpec& task, const std::string& host) const;

  const std::vector<TaskSpec> tasks_;
  const Clock* clock_;
  SpeculationPolicy speculation_;
  LocalityPolicy locality_;
  RetryPolicy retry_;

  // The three collections.
  std::vector<Rank> idle_workers_;            // in the order they became idle
  Queue queued_;                              // tasks waiting for a worker
  std::map<AttemptKey, InFlight> in_flight_;  // attempts running on a worker

  std::vector<TaskState> state_;
  std::unordered_map<Rank, std::string> hosts_;  // every worker that joined
  std::unordered_map<std::string, int> ranks_per_host_;
  size_t expected_workers_ = 0;  // SchedulerOptions::workers
  std::vector<Rank> committed_rank_;
  std::vector<int> committed_attempt_;
  DurationStats durations_;
  uint64_t committed_ = 0, queued_count_ = 0, queued_local_capable_ = 0;
  uint64_t committed_bytes_ = 0, input_bytes_ = 0;
  uint64_t speculative_copies_ = 0, speculative_wins_ = 0;
  uint64_t local_launches_ = 0, remote_launches_ = 0;
  std::vector<Assignment> cancellations_;
  Status failure_;
};

}  // namespace sluice::dist

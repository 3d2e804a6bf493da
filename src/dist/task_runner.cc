#include "sluice/dist/task_runner.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "dist/attempt_slot.h"
#include "dist/wire.h"

namespace sluice::dist {
namespace {

// Message tags of the coordinator protocol. Every message starts with the phase number.
// kAnnounce and kDone carry Announce and EndJob, between phases and at the end of a job.
enum Tag : int {
  kReady = 1,
  kAssign = 2,
  kCancel = 3,
  kReport = 4,
  kStop = 5,
  kAnnounce = 6,
  kDone = 7
};

// Sleeps between polls that found nothing: doubling from 10 us up to a maximum, back to zero
// as soon as a poll makes progress (mpi4py.futures' Backoff).
class Backoff {
 public:
  explicit Backoff(double max_seconds) : max_(max_seconds) {}
  void Reset() { delay_ = 0; }
  // Sleeps, but not past `deadline` (a time on `clock`).
  void Wait(const Clock* clock, double deadline) {
    double d = std::min(delay_, std::max(0.0, deadline - clock->Now()));
    if (d > 0) std::this_thread::sleep_for(std::chrono::duration<double>(d));
    delay_ = std::min(max_, std::max(1e-5, delay_ * 2));
  }

 private:
  double max_;
  double delay_ = 0;
};

struct Report {
  TaskId task = 0;
  uint64_t attempt = 0;
  Status status;
  std::string result;
};

std::string EncodeReport(uint64_t phase, const AttemptReport& r) {
  WireWriter w;
  w.U64(phase).U64(r.task).U64(static_cast<uint64_t>(r.attempt));
  w.Error(r.result.status());
  w.Bytes(r.result.ok() ? *r.result : std::string());
  return w.Take();
}

bool DecodeReport(WireReader* in, Report* r) {
  return in->U64(&r->task) && in->U64(&r->attempt) && in->Error(&r->status) &&
         in->Bytes(&r->result);
}

std::string EncodeAttempt(uint64_t phase, TaskId task, int attempt) {
  return WireWriter().U64(phase).U64(task).U64(static_cast<uint64_t>(attempt)).Take();
}

// The outcome every rank learns at the end of a phase, in its stop message.
std::string EncodeOutcome(uint64_t phase, const Status& status, const TaskRunResult& r) {
  WireWriter w;
  w.U64(phase).Error(status).U64(r.committed_rank.size());
  for (size_t i = 0; i < r.committed_rank.size(); ++i) {
    w.U64(static_cast<uint64_t>(r.committed_rank[i]))
        .U64(static_cast<uint64_t>(r.committed_attempt[i]));
  }
  return w.Take();
}

// `in` is past the phase number.
Status DecodeOutcome(WireReader in, size_t size, TaskRunResult* r) {
  Status status;
  uint64_t n = 0;
  if (!in.Error(&status) || !in.U64(&n) || n > size) {
    return Internal("task runner: malformed outcome broadcast");
  }
  r->committed_rank.resize(n);
  r->committed_attempt.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t rank = 0, attempt = 0;
    if (!in.U64(&rank) || !in.U64(&attempt)) return Internal("task runner: malformed outcome");
    r->committed_rank[i] = static_cast<Rank>(rank);
    r->committed_attempt[i] = static_cast<int>(attempt);
  }
  return status;
}

}  // namespace

Status TagWithRank(const Status& error, Rank rank, const std::string& host) {
  if (error.ok()) return error;
  return Status(error.code(),
                "rank " + std::to_string(rank) + " on " + host + ": " + error.message());
}

Status AgreeOnStatus(Transport* t, const Status& mine) {
  std::string e =
      mine.ok() ? "" : WireWriter().Error(TagWithRank(mine, t->rank(), t->host())).Take();
  SLUICE_ASSIGN_OR_RETURN(auto all, t->AllGather(e));
  for (const auto& part : all) {
    Status s;
    if (!part.empty() && WireReader(part).Error(&s)) return s;
  }
  return Status::OK();
}

TaskRunner::TaskRunner(Transport* transport, TaskRunnerOptions options)
    : transport_(transport), options_(std::move(options)) {
  if (options_.clock == nullptr) options_.clock = SteadyClock();
}

Result<TaskRunResult> TaskRunner::Run(const std::vector<TaskSpec>& tasks, TaskHandler* handler) {
  ++phase_;
  if (transport_->rank() == 0) return Coordinate(tasks, handler);
  TaskRunResult result;
  Status outcome;
  Status status = Work(tasks, handler, &outcome, &result);
  if (!status.ok()) {
    // This rank's transport failed: the others may wait for it in a later collective.
    transport_->Abort(1);
    return status;
  }
  SLUICE_RETURN_IF_ERROR(outcome);
  return result;
}

SchedulerOptions WithWorkers(SchedulerOptions options, size_t workers) {
  options.workers = workers;
  return options;
}

// The coordinator's state for one phase, and the handling of each event.
class Coordinator {
 public:
  Coordinator(Transport* t, const TaskRunnerOptions& o, const std::vector<TaskSpec>& tasks,
              TaskHandler* handler, uint64_t phase)
      : t_(t),
        o_(o),
        tasks_(tasks),
        handler_(handler),
        phase_(phase),
        scheduler_(tasks, o.clock, WithWorkers(o.scheduler, t->size())),
        local_(0, o.faults),
        start_(o.clock->Now()) {
    results_.resize(tasks.size());
  }

  Status Loop() {
    Status s = handler_->Start();
    if (s.ok()) {
      scheduler_.AddWorker(0, t_->host());
    } else {
      scheduler_.WorkerStartFailed(0, TagWithRank(s, 0, t_->host()));
    }
    Backoff backoff(o_.backoff_max_seconds);
    double last_progress = -1;
    while (!scheduler_.finished() && !scheduler_.failed()) {
      SLUICE_ASSIGN_OR_RETURN(bool progress, Poll());
      SLUICE_ASSIGN_OR_RETURN(bool sent, Dispatch());
      double now = o_.clock->Now();
      if (o_.on_progress && now - last_progress >= o_.progress_interval) {
        o_.on_progress(scheduler_.Progress(), now - start_);
        last_progress = now;
      }
      if (progress || sent) {
        backoff.Reset();
      } else {
        backoff.Wait(o_.clock, scheduler_.NextDecisionTime());
      }
    }
    if (o_.on_progress) o_.on_progress(scheduler_.Progress(), o_.clock->Now() - start_);
    return Status::OK();
  }

  // Stops the local attempt and tells every worker the outcome with its stop message (point
  // to point: a frozen worker learns it when it wakes, and nobody waits for it here); returns
  // what the phase produced.
  Status Stop(TaskRunResult* result, Status* outcome) {
    local_.Stop();
    result->results = std::move(results_);
    result->committed_rank = scheduler_.committed_ranks();
    result->committed_attempt = scheduler_.committed_attempts();
    result->progress = scheduler_.Progress();
    *outcome = scheduler_.failure();
    std::string stop = EncodeOutcome(phase_, *outcome, *result);
    for (Rank r = 1; r < t_->size(); ++r) SLUICE_RETURN_IF_ERROR(t_->Send(r, kStop, stop));
    return Status::OK();
  }

 private:
  // Handles what has arrived; true when anything did.
  Result<bool> Poll() {
    bool progress = false;
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(auto m, t_->TryReceive());
      if (!m) break;
      progress = true;
      Handle(*m);
    }
    if (local_.Finished()) {
      AttemptReport r = local_.Take();
      Report report{r.task, static_cast<uint64_t>(r.attempt), r.result.status(),
                    r.result.ok() ? std::move(*r.result) : std::string()};
      if (!report.status.ok()) report.status = TagWithRank(report.status, 0, t_->host());
      OnReport(0, std::move(report));
      progress = true;
    }
    return progress;
  }

  void Handle(const Message& m) {
    WireReader in(m.data);
    uint64_t phase = 0;
    if (!in.U64(&phase) || phase != phase_) return;  // a late message of an earlier phase
    if (m.tag == kReady) {
      Status s;
      std::string host;
      if (!in.Error(&s) || !in.Bytes(&host)) return;
      if (s.ok()) {
        scheduler_.AddWorker(m.source, host);
      } else {
        scheduler_.WorkerStartFailed(m.source, s);
      }
    } else if (m.tag == kReport) {
      Report r;
      if (DecodeReport(&in, &r)) OnReport(m.source, std::move(r));
    }
  }

  void OnReport(Rank rank, Report r) {
    int attempt = static_cast<int>(r.attempt);
    if (!r.status.ok()) {
      scheduler_.TaskFailed(rank, r.task, attempt, r.status);
      return;
    }
    if (scheduler_.TaskFinished(rank, r.task, attempt) != Outcome::kCommitted) return;
    if (o_.on_commit) o_.on_commit(r.task, r.result);
    results_[r.task] = std::move(r.result);
  }

  // Sends the scheduler's decisions; true when there were any.
  Result<bool> Dispatch() {
    auto assignments = scheduler_.Schedule();
    for (const auto& a : assignments) {
      if (a.rank == 0) {
        local_.Start(tasks_[a.task], a.attempt, handler_);
      } else {
        SLUICE_RETURN_IF_ERROR(t_->Send(a.rank, kAssign, EncodeAttempt(phase_, a.task, a.attempt)));
      }
    }
    auto cancellations = scheduler_.TakeCancellations();
    for (const auto& c : cancellations) {
      if (c.rank == 0) {
        if (local_.Runs(c.task, c.attempt)) local_.Cancel();
      } else {
        SLUICE_RETURN_IF_ERROR(t_->Send(c.rank, kCancel, EncodeAttempt(phase_, c.task, c.attempt)));
      }
    }
    return !assignments.empty() || !cancellations.empty();
  }

  Transport* t_;
  const TaskRunnerOptions& o_;
  const std::vector<TaskSpec>& tasks_;
  TaskHandler* handler_;
  const uint64_t phase_;
  Scheduler scheduler_;
  AttemptSlot local_;  // rank 0's own worker
  const double start_;
  std::vector<std::string> results_;
};

Result<TaskRunResult> TaskRunner::Coordinate(const std::vector<TaskSpec>& tasks,
                                             TaskHandler* handler) {
  Coordinator coordinator(transport_, options_, tasks, handler, phase_);
  Status status = coordinator.Loop();
  if (!status.ok()) {  // the transport itself failed: the workers cannot be told
    transport_->Abort(1);
    return status;
  }
  TaskRunResult result;
  Status outcome;
  status = coordinator.Stop(&result, &outcome);
  if (!status.ok()) {
    transport_->Abort(1);
    return status;
  }
  SLUICE_RETURN_IF_ERROR(outcome);
  return result;
}

Status TaskRunner::Work(const std::vector<TaskSpec>& tasks, TaskHandler* handler, Status* outcome,
                        TaskRunResult* result) {
  const Rank rank = transport_->rank();
  const std::string& host = transport_->host();
  Status started = handler->Start();
  SLUICE_RETURN_IF_ERROR(transport_->Send(
      0, kReady,
      WireWriter().U64(phase_).Error(TagWithRank(started, rank, host)).Bytes(host).Take()));
  AttemptSlot slot(rank, options_.faults);
  Backoff backoff(options_.backoff_max_seconds);
  while (true) {
    bool progress = false;
    if (slot.Finished()) {
      AttemptReport r = slot.Take();
      if (!r.result.ok()) r.result = TagWithRank(r.result.status(), rank, host);
      SLUICE_RETURN_IF_ERROR(transport_->Send(0, kReport, EncodeReport(phase_, r)));
      progress = true;
    }
    SLUICE_ASSIGN_OR_RETURN(auto m, transport_->TryReceive());
    if (m) {
      progress = true;
      WireReader in(m->data);
      uint64_t phase = 0, task = 0, attempt = 0;
      if (!in.U64(&phase) || phase != phase_) continue;
      if (m->tag == kStop) {
        // The attempt still running, if any, lost: it stops before the outcome is returned,
        // so that the caller discards all of its output.
        slot.Stop();
        *outcome = DecodeOutcome(in, m->data.size(), result);
        return Status::OK();
      }
      if (!in.U64(&task) || !in.U64(&attempt) || task >= tasks.size()) continue;
      if (m->tag == kAssign && !slot.busy()) {
        slot.Start(tasks[task], static_cast<int>(attempt), handler);
      } else if (m->tag == kCancel && slot.Runs(task, static_cast<int>(attempt))) {
        slot.Cancel();
      }
    }
    if (progress) {
      backoff.Reset();
    } else {
      backoff.Wait(options_.clock, Scheduler::kNever);
    }
  }
}

Result<std::string> Announce(Transport* t, std::string data, double backoff_max_seconds) {
  if (t->rank() == 0) {
    for (Rank r = 1; r < t->size(); ++r) SLUICE_RETURN_IF_ERROR(t->Send(r, kAnnounce, data));
    return data;
  }
  Backoff backoff(backoff_max_seconds);
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(auto m, t->TryReceive());
    if (m && m->source == 0 && m->tag == kAnnounce) return std::move(m->data);
    if (m) {
      backoff.Reset();  // a late message of a phase this rank has left
    } else {
      backoff.Wait(SteadyClock(), Scheduler::kNever);
    }
  }
}

Status AnnounceStatus(Transport* t, const Status& rank0) {
  std::string mine = t->rank() == 0 ? WireWriter().Error(rank0).Take() : "";
  SLUICE_ASSIGN_OR_RETURN(std::string data, Announce(t, std::move(mine)));
  Status status;
  if (!WireReader(data).Error(&status)) return Internal("malformed status announcement");
  return status;
}

Result<std::vector<Rank>> EndJob(Transport* t, double wait_seconds) {
  std::vector<Rank> silent;
  if (t->rank() != 0) {
    SLUICE_RETURN_IF_ERROR(t->Send(0, kDone, ""));
    return silent;
  }
  std::vector<bool> done(t->size(), false);
  int waiting = t->size() - 1;
  const Clock* clock = SteadyClock();
  const double deadline = clock->Now() + wait_seconds;
  Backoff backoff(0.005);
  while (waiting > 0 && clock->Now() < deadline) {
    SLUICE_ASSIGN_OR_RETURN(auto m, t->TryReceive());
    if (!m) {
      backoff.Wait(clock, deadline);
      continue;
    }
    backoff.Reset();  // other messages are late ones of a phase that ended
    if (m->tag == kDone && m->source > 0 && m->source < t->size() && !done[m->source]) {
      done[m->source] = true;
      --waiting;
    }
  }
  for (Rank r = 1; r < t->size(); ++r) {
    if (!done[r]) silent.push_back(r);
  }
  return silent;
}

}  // namespace sluice::dist

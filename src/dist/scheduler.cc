#include "sluice/dist/scheduler.h"

#include <algorithm>

namespace sluice::dist {

void Scheduler::Queue::Push(const TaskSpec& task) {
  for (const auto& host : task.hosts) by_host_[host].push_back(task.id);
  if (task.hosts.empty()) no_preference_.push_back(task.id);
  all_.push_back(task.id);
}

int64_t Scheduler::Queue::Pop(std::deque<TaskId>* list, const std::vector<TaskState>& states) {
  while (list != nullptr && !list->empty()) {
    TaskId t = list->front();
    list->pop_front();
    if (states[t].state == State::kQueued) return static_cast<int64_t>(t);
  }
  return -1;
}

std::deque<TaskId>* Scheduler::Queue::ForHost(const std::string& host) {
  auto it = by_host_.find(host);
  return it == by_host_.end() ? nullptr : &it->second;
}

Scheduler::Scheduler(std::vector<TaskSpec> tasks, const Clock* clock, SchedulerOptions options)
    : tasks_(std::move(tasks)),
      clock_(clock),
      speculation_(options.speculation),
      locality_(options.locality),
      retry_(options.retry),
      state_(tasks_.size()),
      committed_rank_(tasks_.size(), -1),
      committed_attempt_(tasks_.size(), -1) {
  for (const auto& task : tasks_) {
    queued_.Push(task);
    input_bytes_ += task.bytes;
  }
  queued_count_ = tasks_.size();
  expected_workers_ = options.workers;
  locality_.Start(clock_->Now());
}

bool Scheduler::IsLocal(const TaskSpec& task, const std::string& host) const {
  return std::find(task.hosts.begin(), task.hosts.end(), host) != task.hosts.end();
}

void Scheduler::AddWorker(Rank rank, const std::string& host) {
  hosts_[rank] = host;
  if (ranks_per_host_[host]++ == 0) {
    // A new node: queued tasks with input there can now run node-locally.
    for (const auto& task : tasks_) {
      TaskState& s = state_[task.id];
      if (s.local_capable || !IsLocal(task, host)) continue;
      s.local_capable = true;
      if (s.state == State::kQueued) ++queued_local_capable_;
    }
  }
  idle_workers_.push_back(rank);
  if (expected_workers_ > 0 && hosts_.size() == expected_workers_) CheckOnlyOnHostsRunnable();
}

void Scheduler::CheckOnlyOnHostsRunnable() {
  for (const auto& task : tasks_) {
    if (!task.only_on_hosts || state_[task.id].state != State::kQueued) continue;
    const bool runnable = std::any_of(task.hosts.begin(), task.hosts.end(), [&](const auto& h) {
      return ranks_per_host_.count(h) > 0;
    });
    if (runnable) continue;
    std::string hosts;
    for (const auto& h : task.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
    Fail(FailedPrecondition("task " + std::to_string(task.id) + ": its input is only on " +
                            (hosts.empty() ? std::string("no node") : "node(s) " + hosts) +
                            ", where no rank of this job runs (" +
                            std::to_string(expected_workers_) + " ranks)"));
    return;
  }
}

void Scheduler::WorkerStartFailed(Rank, const Status& error) { Fail(error); }

void Scheduler::Fail(const Status& error) {
  if (failure_.ok()) failure_ = error;
}

bool Scheduler::Retire(Rank rank, TaskId task, int attempt, InFlight* attempt_out) {
  auto it = in_flight_.find({task, attempt});
  if (it == in_flight_.end() || it->second.rank != rank) return false;
  *attempt_out = it->second;
  in_flight_.erase(it);
  --state_[task].running;
  idle_workers_.push_back(rank);
  return true;
}

Outcome Scheduler::TaskFinished(Rank rank, TaskId task, int attempt) {
  InFlight done;
  if (task >= tasks_.size() || !Retire(rank, task, attempt, &done)) return Outcome::kDiscarded;
  TaskState& s = state_[task];
  if (s.state != State::kRunning) return Outcome::kDiscarded;  // another copy won
  s.state = State::kCommitted;
  committed_rank_[task] = rank;
  committed_attempt_[task] = attempt;
  ++committed_;
  committed_bytes_ += tasks_[task].bytes;
  if (done.speculative) ++speculative_wins_;
  durations_.Add(clock_->Now() - done.started);
  for (auto& [key, other] : in_flight_) {
    if (key.first != task || other.cancel_sent) continue;
    other.cancel_sent = true;
    cancellations_.push_back({other.rank, task, key.second, other.speculative, false});
  }
  return Outcome::kCommitted;
}

void Scheduler::TaskFailed(Rank rank, TaskId task, int attempt, const Status& error) {
  InFlight done;
  if (task >= tasks_.size() || !Retire(rank, task, attempt, &done)) return;
  TaskState& s = state_[task];
  if (s.state != State::kRunning) return;  // committed by another copy, or the job failed
  ++s.failures;
  if (s.running > 0) return;  // another copy may still succeed
  if (retry_.ShouldRetry(error, s.failures)) {
    Requeue(task);
  } else {
    s.state = State::kFailed;
    Fail(error);
  }
}

void Scheduler::Requeue(TaskId task) {
  TaskState& s = state_[task];
  s.state = State::kQueued;
  queued_.Push(tasks_[task]);
  ++queued_count_;
  if (s.local_capable) ++queued_local_capable_;
}

int64_t Scheduler::PickQueued(Rank rank, double now, bool* local) {
  *local = true;
  int64_t t = queued_.Pop(queued_.ForHost(hosts_[rank]), state_);
  if (t >= 0) return t;
  *local = false;
  t = queued_.Pop(queued_.NoPreference(), state_);
  if (t >= 0) return t;
  if (!locality_.MayRunRemote(now, queued_local_capable_ > 0)) return -1;
  while (true) {
    t = queued_.Pop(queued_.All(), state_);
    // A task whose input only its hosts have stays in their lists, for their ranks alone.
    if (t < 0 || !tasks_[t].only_on_hosts) return t;
  }
}

double Scheduler::StragglerThreshold() const {
  return speculation_.StragglerThreshold(durations_, tasks_.size());
}

std::vector<Assignment> Scheduler::Stragglers(double now) const {
  std::vector<Assignment> out;
  double threshold = StragglerThreshold();
  if (threshold == kNever) return out;
  for (const auto& [key, attempt] : in_flight_) {
    const TaskState& s = state_[key.first];
    if (s.state != State::kRunning || s.running != 1) continue;
    if (now - attempt.started > threshold) out.push_back({attempt.rank, key.first, key.second});
  }
  // The longest-running first.
  std::sort(out.begin(), out.end(), [this](const Assignment& a, const Assignment& b) {
    return in_flight_.at({a.task, a.attempt}).started < in_flight_.at({b.task, b.attempt}).started;
  });
  return out;
}

void Scheduler::Launch(Rank rank, TaskId task, bool speculative, bool local, double now,
                       std::vector<Assignment>* out) {
  TaskState& s = state_[task];
  if (!speculative) {
    --queued_count_;
    if (s.local_capable) --queued_local_capable_;
  }
  int attempt = s.attempts++;
  s.state = State::kRunning;
  ++s.running;
  in_flight_[{task, attempt}] = InFlight{rank, now, speculative, false};
  if (speculative) ++speculative_copies_;
  if (!speculative && local) ++local_launches_;
  if (!speculative && !local && !tasks_[task].hosts.empty()) ++remote_launches_;
  if (!speculative) locality_.OnLaunch(local, now);
  out->push_back({rank, task, attempt, speculative, local});
}

std::vector<Assignment> Scheduler::Schedule() {
  std::vector<Assignment> out;
  if (failed()) return out;
  const double now = clock_->Now();
  std::vector<Rank> still_idle;
  for (Rank rank : idle_workers_) {
    bool local = false;
    int64_t t = queued_count_ > 0 ? PickQueued(rank, now, &local) : -1;
    if (t < 0) {
      still_idle.push_back(rank);
    } else {
      Launch(rank, static_cast<TaskId>(t), /*speculative=*/false, local, now, &out);
    }
  }
  // Workers left idle run copies of stragglers (the longest-running first), on another rank
  // than the original's: a rank on a node holding the input if one is idle, else any (never
  // another node for a task whose input only its hosts have).
  std::vector<Assignment> stragglers;
  if (!still_idle.empty()) stragglers = Stragglers(now);
  for (const Assignment& straggler : stragglers) {
    if (still_idle.empty()) break;
    const TaskSpec& task = tasks_[straggler.task];
    auto local = std::find_if(still_idle.begin(), still_idle.end(), [&](Rank r) {
      return r != straggler.rank && IsLocal(task, hosts_[r]);
    });
    auto it = local;
    if (it == still_idle.end() && !task.only_on_hosts) {
      it = std::find_if(still_idle.begin(), still_idle.end(),
                        [&](Rank r) { return r != straggler.rank; });
    }
    if (it == still_idle.end()) continue;
    Launch(*it, straggler.task, /*speculative=*/true, /*local=*/it == local, now, &out);
    still_idle.erase(it);
  }
  idle_workers_ = std::move(still_idle);
  return out;
}

std::vector<Assignment> Scheduler::TakeCancellations() { return std::move(cancellations_); }

double Scheduler::NextDecisionTime() const {
  if (failed() || idle_workers_.empty()) return kNever;
  const double now = clock_->Now();
  double next = kNever;
  if (queued_count_ > 0 && queued_local_capable_ > 0 && locality_.RemoteAllowedAt() > now) {
    next = locality_.RemoteAllowedAt();
  }
  double threshold = StragglerThreshold();
  if (threshold == kNever) return next;
  for (const auto& [key, attempt] : in_flight_) {
    if (state_[key.first].running != 1 || state_[key.first].state != State::kRunning) continue;
    double becomes = attempt.started + threshold;
    if (becomes > now) next = std::min(next, becomes);
  }
  return next;
}

JobProgress Scheduler::Progress() const {
  JobProgress p;
  p.tasks = tasks_.size();
  p.committed = committed_;
  p.running = in_flight_.size();
  p.queued = queued_count_;
  p.input_bytes = input_bytes_;
  p.committed_bytes = committed_bytes_;
  p.speculative_copies = speculative_copies_;
  p.speculative_wins = speculative_wins_;
  p.local_launches = local_launches_;
  p.remote_launches = remote_launches_;
  double threshold = StragglerThreshold();
  const double now = clock_->Now();
  for (const auto& [key, attempt] : in_flight_) {
    if (state_[key.first].state == State::kRunning && now - attempt.started > threshold) {
      ++p.stragglers;
    }
  }
  return p;
}

}  // namespace sluice::dist

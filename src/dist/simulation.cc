#include "sluice/dist/simulation.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>

#include "sluice/base/random.h"

namespace sluice::dist {
namespace {

// A standard normal draw (Box-Muller).
double Normal(SampleRng* rng) {
  double u = 1 - rng->NextDouble();  // (0, 1]
  double v = rng->NextDouble();
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

std::string NodeName(int node) { return "node" + std::to_string(node); }

struct Event {
  double time;
  Rank rank;
  TaskId task;
  int attempt;
  bool cancelled;
  bool operator>(const Event& o) const { return time > o.time; }
};

class Simulator {
 public:
  explicit Simulator(const SimulationOptions& o) : o_(o), rng_(o.seed) {
    nodes_ = std::max(1, o.ranks / std::max(1, o.ranks_per_node));
    // Exactly round(fraction x ranks) slow ranks, drawn first so that they do not depend on
    // the task count.
    slow_.assign(o.ranks, false);
    auto slow = static_cast<int>(std::lround(o.slow_rank_fraction * o.ranks));
    for (int placed = 0; placed < std::min(slow, o.ranks);) {
      auto r = static_cast<size_t>(rng_.UniformInt(o.ranks));
      if (!slow_[r]) slow_[r] = true, ++placed;
    }
    for (uint64_t i = 0; i < o.tasks; ++i) {
      TaskSpec t;
      t.id = i;
      t.bytes = 1;
      std::set<int> chosen;
      while (static_cast<int>(chosen.size()) < std::min(o.replicas, nodes_)) {
        chosen.insert(static_cast<int>(rng_.UniformInt(nodes_)));
      }
      for (int n : chosen) t.hosts.push_back(NodeName(n));
      replicas_.push_back(std::move(chosen));
      base_.push_back(o.median_task_seconds * std::exp(o.sigma * Normal(&rng_)));
      tasks_.push_back(std::move(t));
    }
  }

  SimulationResult Run() {
    std::vector<TaskSpec> told = tasks_;
    if (!o_.tell_hosts) {
      for (auto& t : told) t.hosts.clear();
    }
    Scheduler scheduler(std::move(told), &clock_, o_.scheduler);
    for (Rank r = 0; r < o_.ranks; ++r) scheduler.AddWorker(r, NodeName(r / o_.ranks_per_node));
    while (!scheduler.finished()) {
      for (const Assignment& a : scheduler.Schedule()) Start(a);
      for (const Assignment& a : scheduler.TakeCancellations()) {
        events_.push({clock_.Now(), a.rank, a.task, a.attempt, true});
      }
      double next = scheduler.NextDecisionTime();
      if (!events_.empty()) next = std::min(next, events_.top().time);
      if (next == Scheduler::kNever) break;  // nothing can happen: a stuck job
      clock_.Set(std::max(next, clock_.Now()));
      while (!events_.empty() && events_.top().time <= clock_.Now()) {
        Event e = events_.top();
        events_.pop();
        if (!Live(e)) continue;
        running_.erase({e.rank, e.task, e.attempt});
        if (e.cancelled) {
          scheduler.TaskFailed(e.rank, e.task, e.attempt, Cancelled("copy lost the race"));
        } else {
          scheduler.TaskFinished(e.rank, e.task, e.attempt);
        }
      }
    }
    SimulationResult result;
    result.job_seconds = clock_.Now();
    result.progress = scheduler.Progress();
    for (bool s : slow_) result.slow_ranks += s;
    result.local_reads = local_reads_;
    result.remote_reads = remote_reads_;
    return result;
  }

 private:
  void Start(const Assignment& a) {
    // Local by placement, whatever the scheduler believed (docs/dist.md, "Simulation").
    const bool local = replicas_[a.task].count(a.rank / o_.ranks_per_node) > 0;
    ++(local ? local_reads_ : remote_reads_);
    const double rate = local ? o_.disk_bytes_per_second
                              : std::min(o_.disk_bytes_per_second, o_.network_bytes_per_second);
    double seconds = base_[a.task] + static_cast<double>(o_.task_bytes) / rate;
    seconds *= slow_[a.rank] ? o_.slow_factor : 1;
    running_.insert({a.rank, a.task, a.attempt});
    events_.push({clock_.Now() + seconds, a.rank, a.task, a.attempt, false});
  }
  // A cancelled attempt has two events (its cancellation and its natural end): the first ends it.
  bool Live(const Event& e) const { return running_.count({e.rank, e.task, e.attempt}) > 0; }

  const SimulationOptions o_;
  SampleRng rng_;
  FakeClock clock_;
  int nodes_ = 1;
  std::vector<TaskSpec> tasks_;
  std::vector<std::set<int>> replicas_;  // per task: the nodes holding its input
  std::vector<double> base_;             // per task: compute seconds on a normal rank
  uint64_t local_reads_ = 0, remote_reads_ = 0;
  std::vector<bool> slow_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::set<std::tuple<Rank, TaskId, int>> running_;
};

}  // namespace

SimulationResult Simulate(const SimulationOptions& options) { return Simulator(options).Run(); }

}  // namespace sluice::dist

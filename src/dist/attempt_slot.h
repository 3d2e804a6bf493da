// One task attempt running on a thread of its own, so that the rank's main thread keeps
// polling its messages (a cancellation, the end of the phase) while the task runs.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "sluice/dist/task_runner.h"

namespace sluice::dist {

struct AttemptReport {
  TaskId task = 0;
  int attempt = 0;
  Result<std::string> result = std::string();
};

// Threading: Start/Cancel/Finished/Take from one thread; the attempt runs on another.
class AttemptSlot {
 public:
  AttemptSlot(Rank rank, const FaultOptions& faults) : rank_(rank), faults_(faults) {}
  ~AttemptSlot() { Stop(); }

  bool busy() const { return thread_.joinable(); }
  bool Runs(TaskId task, int attempt) const {
    return busy() && task_ == task && attempt_ == attempt;
  }
  void Start(const TaskSpec& task, int attempt, TaskHandler* handler) {
    task_ = task.id;
    attempt_ = attempt;
    cancel_ = std::make_shared<io::CancelToken>();
    finished_.store(false);
    thread_ = std::thread([this, task, attempt, handler, cancel = cancel_] {
      auto start = std::chrono::steady_clock::now();
      Result<std::string> r = handler->Run(task, attempt, *cancel);
      if (r.ok()) r = SlowDown(task, attempt, start, *cancel, std::move(*r));
      report_ = AttemptReport{task.id, attempt, std::move(r)};
      finished_.store(true, std::memory_order_release);
    });
  }
  void Cancel() {
    if (cancel_) cancel_->Cancel();
  }
  bool Finished() const { return busy() && finished_.load(std::memory_order_acquire); }
  AttemptReport Take() {
    thread_.join();
    return std::move(report_);
  }
  // Cancels the attempt, if any, and waits for it.
  void Stop() {
    Cancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  // The test-only faults: sleeps in 10 ms steps, so that a cancellation ends the sleep.
  Result<std::string> SlowDown(const TaskSpec& task, int attempt,
                               std::chrono::steady_clock::time_point start,
                               const io::CancelToken& cancel, std::string result) const {
    using namespace std::chrono;
    double extra = 0;
    if (faults_.slow_task == static_cast<int64_t>(task.id) && attempt == 0) {
      extra += faults_.slow_task_seconds;
    }
    if (faults_.slow_rank == rank_ && faults_.slow_rank_factor > 1) {
      extra +=
          (faults_.slow_rank_factor - 1) * duration<double>(steady_clock::now() - start).count();
    }
    auto until =
        steady_clock::now() + duration_cast<steady_clock::duration>(duration<double>(extra));
    while (steady_clock::now() < until) {
      if (cancel.cancelled()) return Cancelled("attempt cancelled while slowed down");
      std::this_thread::sleep_for(milliseconds(10));
    }
    return result;
  }

  const Rank rank_;
  const FaultOptions faults_;
  TaskId task_ = 0;
  int attempt_ = 0;
  std::shared_ptr<io::CancelToken> cancel_;
  std::atomic<bool> finished_{false};
  AttemptReport report_;
  std::thread thread_;
};

}  // namespace sluice::dist

// ThreadPool: a fixed set of worker threads running submitted tasks in FIFO order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice {

class ThreadPool {
 public:
  // `threads` workers; 0 means one per hardware thread.
  explicit ThreadPool(size_t threads);
  // Runs the tasks still queued, then joins the workers. Tasks must therefore finish on
  // their own (pipeline tasks check a cancellation flag).
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task);
  size_t size() const { return workers_.size(); }

  static size_t HardwareThreads();
  // CPUs the calling thread may run on (its affinity mask: taskset, sched_setaffinity), >= 1.
  static size_t UsableCpus();

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace sluice

// ThreadPool: a fixed set of worker threads running submitted tasks in FIFO order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice {

class ThreadPool {
 public:
  // `threads` workers; 0 means DefaultThreads().
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
  // The default thread count of pools, tokenizers and converters: UsableCpus(), capped by
  // the CPU quota of the process's cgroup (v2 `cpu.max`, v1 `cpu.cfs_quota_us` /
  // `cpu.cfs_period_us`, as `docker --cpus=2` sets them; rounded up), >= 1. A container
  // limited to 2 CPUs on a 64-core host gets 2 threads, not 64. The quota is read again
  // at most once a second.
  static size_t DefaultThreads();
  // The CPUs a quota allows, rounded up; 0 when there is no quota (quota <= 0, period <= 0).
  static size_t QuotaCpus(long long quota, long long period);
  // The quota in a cgroup v2 `cpu.max` text ("max 100000": none, 0; "150000 100000": 2;
  // unreadable: 0). Exposed for tests.
  static size_t CpuMaxCpus(const std::string& cpu_max);
  // The smallest CPU quota (in CPUs, rounded up) on the cgroups `proc_self_cgroup` (the text
  // of /proc/self/cgroup) names, or on their ancestors, under `cgroup_root`
  // (/sys/fs/cgroup): v2 `cpu.max`, v1 `cpu/cpu.cfs_quota_us` over `cpu.cfs_period_us`.
  // 0: no quota. Exposed for tests.
  static size_t CgroupQuotaCpus(const std::string& proc_self_cgroup,
                                const std::string& cgroup_root);

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace sluice

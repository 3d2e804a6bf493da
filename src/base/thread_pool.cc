#include "sluice/base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace sluice {

size_t ThreadPool::HardwareThreads() {
  size_t n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

size_t ThreadPool::UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return static_cast<size_t>(std::max(1, CPU_COUNT(&set)));
}

size_t ThreadPool::QuotaCpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<size_t>((quota + period - 1) / period);
}

size_t ThreadPool::CpuMaxCpus(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota_text;
  long long period = 0;
  if (!(in >> quota_text >> period)) return 0;  // also "max 100000": no quota
  long long quota = 0;
  const char* end = quota_text.data() + quota_text.size();
  const auto [ptr, ec] = std::from_chars(quota_text.data(), end, quota);
  if (ec != std::errc() || ptr != end) return 0;
  return QuotaCpus(quota, period);
}

namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return f ? s.str() : std::string();
}

long long ReadNumber(const std::string& path) {
  std::istringstream in(ReadSmallFile(path));
  long long v = 0;
  return in >> v ? v : 0;
}

// The CPU quota of this process's cgroup, in CPUs rounded up; 0 if none is found. Looks in
// the process's own cgroup directory (from /proc/self/cgroup), then at the mount's root
// (inside a container, the cgroup namespace root is the container's cgroup).
size_t CgroupQuotaCpus() {
  std::istringstream lines(ReadSmallFile("/proc/self/cgroup"));
  std::string line;
  while (std::getline(lines, line)) {
    // "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1)
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      for (const std::string& dir : {"/sys/fs/cgroup" + path, std::string("/sys/fs/cgroup")}) {
        if (size_t n = ThreadPool::CpuMaxCpus(ReadSmallFile(dir + "/cpu.max"))) return n;
      }
      continue;
    }
    std::istringstream names(controllers);
    std::string name;
    bool cpu = false;
    while (std::getline(names, name, ',')) cpu = cpu || name == "cpu";
    if (!cpu) continue;
    for (const std::string& root :
         {std::string("/sys/fs/cgroup/cpu"), "/sys/fs/cgroup/" + controllers}) {
      for (const std::string& dir : {root + path, root}) {
        if (size_t n = ThreadPool::QuotaCpus(ReadNumber(dir + "/cpu.cfs_quota_us"),
                                             ReadNumber(dir + "/cpu.cfs_period_us"))) {
          return n;
        }
      }
    }
  }
  return 0;
}

}  // namespace

size_t ThreadPool::DefaultThreads() {
  size_t n = UsableCpus();
  if (size_t quota = CgroupQuotaCpus()) n = std::min(n, quota);
  return std::max<size_t>(1, n);
}

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = DefaultThreads();
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::WorkerLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    task();
    l.lock();
  }
}

}  // namespace sluice

#include "sluice/base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

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

// `root` + `path` and each of its ancestors up to `root`: a quota on any of them applies.
std::vector<std::string> CgroupDirs(const std::string& root, std::string path) {
  std::vector<std::string> dirs;
  while (!path.empty() && path != "/") {
    dirs.push_back(root + path);
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) break;
    path.resize(slash);
  }
  dirs.push_back(root);
  return dirs;
}

}  // namespace

size_t ThreadPool::CgroupQuotaCpus(const std::string& proc_self_cgroup,
                                   const std::string& cgroup_root) {
  size_t best = 0;
  const auto take = [&best](size_t n) {
    if (n != 0 && (best == 0 || n < best)) best = n;
  };
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    // "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1)
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      for (const std::string& dir : CgroupDirs(cgroup_root, path)) {
        take(CpuMaxCpus(ReadSmallFile(dir + "/cpu.max")));
      }
      continue;
    }
    std::istringstream names(controllers);
    std::string name;
    bool cpu = false;
    while (std::getline(names, name, ',')) cpu = cpu || name == "cpu";
    if (!cpu) continue;
    for (const std::string& root : {cgroup_root + "/cpu", cgroup_root + "/" + controllers}) {
      for (const std::string& dir : CgroupDirs(root, path)) {
        take(QuotaCpus(ReadNumber(dir + "/cpu.cfs_quota_us"),
                       ReadNumber(dir + "/cpu.cfs_period_us")));
      }
    }
  }
  return best;
}

size_t ThreadPool::DefaultThreads() {
  // The quota is read at most once a second: reading it opens a dozen files under /proc and
  // /sys (~0.1 ms), and every pipeline iterator asks (a restore's first batch waits for it).
  static std::atomic<int64_t> read_at{-1};  // steady ms; -1: never
  static std::atomic<size_t> quota{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  const int64_t last = read_at.load(std::memory_order_acquire);
  if (last < 0 || now - last >= 1000) {
    quota.store(CgroupQuotaCpus(ReadSmallFile("/proc/self/cgroup"), "/sys/fs/cgroup"),
                std::memory_order_relaxed);
    read_at.store(now, std::memory_order_release);
  }
  size_t n = UsableCpus();
  if (const size_t q = quota.load(std::memory_order_relaxed)) n = std::min(n, q);
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

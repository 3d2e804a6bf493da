// ThreadPool's default size: the CPUs this process may use (affinity mask and cgroup CPU
// quota), never the machine's hardware threads when those are fewer.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "sluice/base/thread_pool.h"

namespace sluice {
namespace {

TEST(ThreadPool, QuotaRoundsUpAndNoQuotaIsZero) {
  EXPECT_EQ(ThreadPool::QuotaCpus(200000, 100000), 2u);
  EXPECT_EQ(ThreadPool::QuotaCpus(150000, 100000), 2u);  // --cpus=1.5: two threads
  EXPECT_EQ(ThreadPool::QuotaCpus(50000, 100000), 1u);
  EXPECT_EQ(ThreadPool::QuotaCpus(-1, 100000), 0u);  // cgroup v1: no limit
  EXPECT_EQ(ThreadPool::QuotaCpus(100000, 0), 0u);
}

TEST(ThreadPool, ParsesCgroupV2CpuMax) {
  EXPECT_EQ(ThreadPool::CpuMaxCpus("max 100000\n"), 0u);
  EXPECT_EQ(ThreadPool::CpuMaxCpus("300000 100000\n"), 3u);
  EXPECT_EQ(ThreadPool::CpuMaxCpus("250000 100000"), 3u);
  EXPECT_EQ(ThreadPool::CpuMaxCpus(""), 0u);  // no such file
  EXPECT_EQ(ThreadPool::CpuMaxCpus("garbage"), 0u);
  EXPECT_EQ(ThreadPool::CpuMaxCpus("12x 100000"), 0u);
  EXPECT_EQ(ThreadPool::CpuMaxCpus("x12 100000"), 0u);
}

// A fake /sys/fs/cgroup under a temp dir: `files` maps paths below it to contents.
class FakeCgroups {
 public:
  explicit FakeCgroups(const std::map<std::string, std::string>& files)
      : root_(std::filesystem::temp_directory_path() /
              ("sluice-cgroup-" + std::to_string(::getpid()) + "-" + std::to_string(next_++))) {
    for (const auto& [path, text] : files) {
      std::filesystem::create_directories((root_ / path).parent_path());
      std::ofstream(root_ / path) << text;
    }
  }
  ~FakeCgroups() { std::filesystem::remove_all(root_); }
  std::string root() const { return root_.string(); }

 private:
  static inline int next_ = 0;
  std::filesystem::path root_;
};

TEST(ThreadPool, CgroupV2QuotaIsTheSmallestOnThePathToTheRoot) {
  FakeCgroups fs({{"cpu.max", "max 100000\n"},
                  {"user.slice/cpu.max", "300000 100000\n"},
                  {"user.slice/job/cpu.max", "max 100000\n"},
                  {"user.slice/job/step/cpu.max", "500000 100000\n"}});
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("0::/user.slice/job/step\n", fs.root()), 3u);
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("0::/user.slice/job\n", fs.root()), 3u);
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("0::/\n", fs.root()), 0u);  // root: no quota
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("0::/elsewhere\n", fs.root()), 0u);
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("", fs.root()), 0u);
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("garbage\n0:\n", fs.root()), 0u);
}

TEST(ThreadPool, CgroupV1QuotaOverPeriod) {
  FakeCgroups fs({{"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n"},
                  {"cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"},
                  {"cpu,cpuacct/cpu.cfs_quota_us", "-1\n"},
                  {"cpu,cpuacct/cpu.cfs_period_us", "100000\n"}});
  const std::string cgroup = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n";
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus(cgroup, fs.root()), 2u);  // 1.5 CPUs: 2 threads
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("4:cpu,cpuacct:/\n", fs.root()), 0u);  // -1: none
  EXPECT_EQ(ThreadPool::CgroupQuotaCpus("4:memory:/docker/abc\n", fs.root()), 0u);
}

TEST(ThreadPool, DefaultFollowsTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  const size_t usable = ThreadPool::UsableCpus();
  EXPECT_GE(ThreadPool::DefaultThreads(), 1u);
  EXPECT_LE(ThreadPool::DefaultThreads(), usable);
  EXPECT_LE(usable, ThreadPool::HardwareThreads());

  // Pinned to one CPU (taskset -c N), a default pool has one worker.
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c) {
    if (CPU_ISSET(c, &saved)) first = c;
  }
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const size_t pinned_default = ThreadPool::DefaultThreads();
  size_t pinned_pool = 0;
  {
    ThreadPool pool(0);
    pinned_pool = pool.size();
    std::atomic<int> ran{0};
    pool.Submit([&] { ran.fetch_add(1); });
    while (ran.load() == 0) {
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(pinned_default, 1u);
  EXPECT_EQ(pinned_pool, 1u);
}

}  // namespace
}  // namespace sluice

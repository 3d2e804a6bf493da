// ThreadPool's default size: the CPUs this process may use (affinity mask and cgroup CPU
// quota), never the machine's hardware threads when those are fewer.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>

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

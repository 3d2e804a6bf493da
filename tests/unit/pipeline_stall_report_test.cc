// The stall report's bottleneck choice: a stage's busy time is its wall time minus the time its
// threads were preempted (waiting for a CPU), so on a machine with more runnable threads than
// cores the report names the stage that does the most work per thread, not the one with the
// most threads waiting for a core.
#include <gtest/gtest.h>
#include <sched.h>

#include <ctime>
#include <thread>

#include "pipeline/context.h"
#include "pipeline_test_util.h"

namespace sluice::pipeline {
namespace {

using testing::Ids;
using testing::MakeIt;

constexpr uint64_t kMs = 1000000;

ThreadClock Clock(uint64_t run_ms, uint64_t wait_ms) {
  return ThreadClock{run_ms * kMs, wait_ms * kMs};
}

TEST(StageBusyTime, TimeWaitingForACpuIsNotBusy) {
  // 10 ms inside the stage, 8 of them runnable but preempted.
  EXPECT_EQ(BusyNs(10 * kMs, Clock(5, 1), Clock(7, 9)), 2 * kMs);
}

TEST(StageBusyTime, BlockedTimeIsBusy) {
  // Sleeping or waiting for I/O is the stage's own latency (a remote read, a slow map).
  EXPECT_EQ(BusyNs(10 * kMs, Clock(0, 0), Clock(1, 0)), 10 * kMs);
}

TEST(StageBusyTime, ClockGlitchesNeverExceedTheWallTime) {
  EXPECT_EQ(BusyNs(1 * kMs, Clock(0, 0), Clock(1, 3)), 0u);
  EXPECT_EQ(BusyNs(1 * kMs, Clock(0, 5), Clock(1, 3)), 1 * kMs);  // no schedstat: zeros
}

// Burns `us` microseconds of this thread's CPU time (not wall time: a preempted thread
// still does the same work).
void SpinCpu(int64_t us);

TEST(StageBusyTime, ThreadClockSeesRunningAndWaiting) {
  ThreadClock a = ReadThreadClock();
  if (a.run_ns == 0 && a.wait_ns == 0) GTEST_SKIP() << "no /proc/thread-self/schedstat";
  // Two spinning threads pinned to one CPU: each waits while the other runs.
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) GTEST_SKIP() << "cannot pin to one CPU";
  std::thread other([] { SpinCpu(30000); });
  SpinCpu(30000);
  other.join();
  ThreadClock b = ReadThreadClock();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_GE(b.run_ns - a.run_ns, 20 * kMs);
  EXPECT_GT(b.wait_ns - a.wait_ns, 0u);
}

// Burns `us` microseconds of this thread's CPU time (not wall time: a preempted thread
// still does the same work).
void SpinCpu(int64_t us) {
  timespec start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  volatile uint64_t x = 0;
  do {
    for (int i = 0; i < 100; ++i) x = x + static_cast<uint64_t>(i);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000 + (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

MapFn Spinning(int64_t us) {
  return [us](Element* e, const MapContext& ctx) {
    SpinCpu(us);
    return testing::ParseId(e, ctx);
  };
}

TEST(PipelineStallReport, OversubscribedCpuNamesTheStageDoingTheMostWork) {
  // Everything on one core: a light map with 1 task and a heavy one (4x the work per element)
  // with 2 tasks, plus read and the consumer. Every task is inside its stage nearly all the
  // time, mostly waiting for that core, so wall time would rank them alike; the heavy map is
  // what limits throughput.
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) GTEST_SKIP() << "cannot pin to one CPU";
  MapOptions light = testing::IdMap(1);
  light.name = "light";
  light.chunk_elements = 8;
  MapOptions heavy;
  heavy.name = "heavy";
  heavy.parallelism = 2;
  heavy.chunk_elements = 8;
  auto to_string = [](Element* e, const MapContext& ctx) {
    int64_t id = *e->tensors[0].data<int64_t>();
    e->tensors[0].SetScalarString(std::to_string(id), ctx.pool());
    return Status::OK();
  };
  MapOptions as_record;
  as_record.parallelism = 0;
  as_record.output_schema = Schema({FeatureInfo{"record", DType::kString, Shape()}});
  Dataset ds = Ids({600})
                   .Map(Spinning(40), light)
                   .Map(to_string, as_record)
                   .Map(Spinning(160),
                        [&] {
                          MapOptions o = heavy;
                          o.output_schema = testing::IdSchema();
                          return o;
                        }())
                   .Batch(10);
  auto it = MakeIt(ds, 4);  // pool threads inherit the one-CPU affinity
  EXPECT_EQ(testing::Drain(it.get()).size(), 600u);
  PipelineStats st = it->stats();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  int b = st.bottleneck();
  ASSERT_GE(b, 0);
  EXPECT_EQ(st.stages[static_cast<size_t>(b)].name, "map:heavy") << it->Report();
}

}  // namespace
}  // namespace sluice::pipeline

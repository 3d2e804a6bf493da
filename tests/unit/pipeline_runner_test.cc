// ParallelRunner with RunnerOptions::consumer_first (the prefetch stage): a consumer that comes
// straight back pulls the next chunks itself instead of racing a pool task for them, and a
// consumer that stays away gets them pulled ahead on the pool as before.
//
// A one-thread pool runs tasks in FIFO order, so once a marker task submitted after them has
// run, no task of the runner is running or queued: the counts below are exact, not timed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <thread>

#include "pipeline/parallel_runner.h"
#include "unit/runner_test_context.h"

namespace sluice::pipeline {
namespace {

// Elements 0..n-1 (in id.position), one per chunk; counts the pulls made off the consumer's
// thread (by pool tasks).
class CountingWork final : public ChunkWork {
 public:
  explicit CountingWork(uint64_t n) : n_(n) {}
  void Pull(Chunk* c, size_t max_elements) override {
    for (; c->size < max_elements && next_ < n_; ++next_) c->Slot(c->size++).id.position = next_;
    c->end = next_ == n_;
    if (std::this_thread::get_id() != consumer_) pool_pulls.fetch_add(1);
  }
  void Work(Chunk*) override {}

  std::atomic<uint64_t> pool_pulls{0};

 private:
  const uint64_t n_;
  const std::thread::id consumer_ = std::this_thread::get_id();
  uint64_t next_ = 0;  // Pull is serialized by the runner
};

class ConsumerFirst : public ::testing::Test {
 protected:
  // A prefetch-like runner over `work`: one-element chunks, one task, a window of two.
  std::unique_ptr<ParallelRunner> Runner(
      CountingWork* work, uint64_t quick_consumer_ns,
      uint64_t cheap_pull_ns = std::numeric_limits<uint64_t>::max()) {
    RunnerOptions ro;
    ro.chunk_elements = 1;
    ro.parallelism = 1;
    ro.window = 2;
    ro.kind = Tunable::Kind::kPrefetchDepth;
    ro.consumer_first = true;
    ro.quick_consumer_ns = quick_consumer_ns;
    ro.cheap_pull_ns = cheap_pull_ns;
    return std::make_unique<ParallelRunner>(&rt_.ctx, &counters_, work, ro);
  }

  // Returns once no task of the runner runs or waits in the pool (the consumer, this thread,
  // takes nothing meanwhile, so tasks stop when the window is full).
  void WaitUntilPoolIdle() {
    uint64_t before = 0;
    do {
      before = counters_.tasks.load();
      std::promise<void> ran;
      rt_.pool.Submit([&ran] { ran.set_value(); });
      ran.get_future().wait();
    } while (counters_.tasks.load() != before);
  }

  uint64_t Position(ParallelRunner* runner) {
    Element e;
    Result<bool> more = runner->Next(&e);
    EXPECT_TRUE(more.ok() && *more);
    return e.id.position;
  }

  testing::RunnerTestContext rt_{1};
  StageCounters counters_;
};

TEST_F(ConsumerFirst, QuickConsumerStartsNoTasksAndPullsInOrderItself) {
  CountingWork work(100);
  // Every gap counts as quick: the test does not depend on how fast this machine is.
  auto runner = Runner(&work, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(Position(runner.get()), 0u);  // not known to be quick before its first return
  WaitUntilPoolIdle();
  const uint64_t tasks = counters_.tasks.load(), pool_pulls = work.pool_pulls.load();
  for (uint64_t i = 1; i < 100; ++i) ASSERT_EQ(Position(runner.get()), i);
  Element e;
  EXPECT_FALSE(*runner->Next(&e));
  EXPECT_EQ(counters_.tasks.load(), tasks) << "a task was started on a quick consumer's behalf";
  EXPECT_EQ(work.pool_pulls.load(), pool_pulls);
  EXPECT_EQ(counters_.elements.load(), 100u);
}

TEST_F(ConsumerFirst, ConsumerAwayLongerGetsTheNextChunkPulledAhead) {
  CountingWork work(100);
  auto runner = Runner(&work, RunnerOptions().quick_consumer_ns);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_EQ(Position(runner.get()), i);  // quick or not
  for (uint64_t i = 20; i < 25; ++i) {
    WaitUntilPoolIdle();
    const uint64_t tasks = counters_.tasks.load(), pool_pulls = work.pool_pulls.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a "training step"
    ASSERT_EQ(Position(runner.get()), i);
    EXPECT_GT(counters_.tasks.load(), tasks) << "no task pulls ahead for a slow consumer";
    WaitUntilPoolIdle();
    EXPECT_GT(work.pool_pulls.load(), pool_pulls);
  }
}

TEST_F(ConsumerFirst, ExpensivePullsArePulledAheadEvenForAQuickConsumer) {
  // Pulls slower than cheap_pull_ns (here: every pull) go to a pool task as before, however
  // quickly the consumer comes back: a wake-up per chunk is then noise, and the consumer's
  // thread stays out of the way of the pool threads.
  CountingWork work(100);
  auto runner = Runner(&work, std::numeric_limits<uint64_t>::max(), /*cheap_pull_ns=*/0);
  EXPECT_EQ(Position(runner.get()), 0u);
  WaitUntilPoolIdle();
  const uint64_t tasks = counters_.tasks.load(), pool_pulls = work.pool_pulls.load();
  for (uint64_t i = 1; i < 10; ++i) {
    ASSERT_EQ(Position(runner.get()), i);
    WaitUntilPoolIdle();
  }
  EXPECT_GE(counters_.tasks.load(), tasks + 9);
  EXPECT_GT(work.pool_pulls.load(), pool_pulls);
}

TEST_F(ConsumerFirst, WithoutItEveryTakenChunkStartsATask) {
  // The behaviour consumer_first changes, as a control for the two tests above.
  CountingWork work(100);
  auto runner = Runner(&work, 0);  // no consumer is ever quick
  EXPECT_EQ(Position(runner.get()), 0u);
  WaitUntilPoolIdle();
  const uint64_t tasks = counters_.tasks.load();
  for (uint64_t i = 1; i < 10; ++i) {
    ASSERT_EQ(Position(runner.get()), i);
    WaitUntilPoolIdle();
  }
  EXPECT_GE(counters_.tasks.load(), tasks + 9);
}

}  // namespace
}  // namespace sluice::pipeline

// What the Python layer needs from the pipeline's consumer side: waits that stay responsive
// (ScopedWaitCheck, for Ctrl-C), iterators that start at a chosen epoch, states that carry
// their epoch, and the snapshot's record counts.
#include <chrono>
#include <thread>

#include "pipeline_test_util.h"
#include "sluice/pipeline/wait_check.h"

namespace sluice::pipeline {
namespace {

using testing::Drain;
using testing::IdMap;
using testing::Ids;
using testing::MakeIt;
using testing::ParseId;

struct Counter {
  int calls = 0;
  int fail_at = 0;  // the call that returns Cancelled (0: never)
  static Status Check(void* arg) {
    auto* self = static_cast<Counter*>(arg);
    ++self->calls;
    return self->calls == self->fail_at ? Cancelled("interrupted") : Status::OK();
  }
};

TEST(WaitCheck, CheckEndsAWaitNobodySignals) {
  std::mutex mu;
  std::condition_variable cv;  // never notified: without the check this would hang
  Counter counter{0, 3};
  ScopedWaitCheck check(&Counter::Check, &counter, std::chrono::milliseconds(1));
  std::unique_lock<std::mutex> lock(mu);
  Status s;
  while (s.ok()) s = WaitWithCheck(cv, lock);
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(counter.calls, 3);
  EXPECT_TRUE(lock.owns_lock());
}

TEST(WaitCheck, ChecksNestAndAreThreadLocal) {
  Counter outer_counter, inner_counter;
  EXPECT_EQ(ScopedWaitCheck::Current(), nullptr);
  ScopedWaitCheck outer(&Counter::Check, &outer_counter);
  {
    ScopedWaitCheck inner(&Counter::Check, &inner_counter);
    EXPECT_EQ(ScopedWaitCheck::Current(), &inner);
    ScopedWaitCheck* seen = &inner;
    std::thread([&] { seen = ScopedWaitCheck::Current(); }).join();
    EXPECT_EQ(seen, nullptr);  // pool threads never run the consumer's check
  }
  EXPECT_EQ(ScopedWaitCheck::Current(), &outer);
}

TEST(WaitCheck, CheckRunsOnlyOncePerInterval) {
  Counter counter;
  ScopedWaitCheck check(&Counter::Check, &counter, std::chrono::hours(1));
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(check.MaybeRun().ok());
  EXPECT_EQ(counter.calls, 0);
}

TEST(WaitCheck, PipelineWithoutWaitsNeverCallsTheCheck) {
  Counter counter{0, 1};  // would fail the first call
  ScopedWaitCheck check(&Counter::Check, &counter, std::chrono::hours(1));
  auto it = MakeIt(Ids({50, 50}).Map(ParseId, IdMap(2)).Batch(7).Prefetch(2));
  EXPECT_EQ(Drain(it.get()).size(), 100u);
}

ShuffleOptions Seed7() {
  ShuffleOptions o;
  o.seed = 7;
  return o;
}

TEST(IteratorEpoch, OptionsEpochEqualsReadEpoch) {
  ReadOptions read;
  read.epoch = 2;
  auto expected = Drain(MakeIt(Ids({20, 11}, read).Shuffle(Seed7()).Map(ParseId, IdMap())).get());
  PipelineOptions o;
  o.threads = 2;
  o.epoch = 2;
  auto it = Ids({20, 11}).Shuffle(Seed7()).Map(ParseId, IdMap()).MakeIterator(o);
  ASSERT_TRUE(it.ok());
  EXPECT_EQ(Drain(it->get()), expected);
  auto epoch0 = Drain(MakeIt(Ids({20, 11}).Shuffle(Seed7()).Map(ParseId, IdMap())).get());
  EXPECT_NE(epoch0, expected);
}

TEST(IteratorEpoch, RestoreTakesTheEpochFromTheState) {
  Dataset ds = Ids({20, 11}).Shuffle(Seed7()).Map(ParseId, IdMap()).Batch(3);
  PipelineOptions o;
  o.threads = 2;
  o.epoch = 3;
  auto it = ds.MakeIterator(o);
  ASSERT_TRUE(it.ok());
  auto head = Drain(it->get(), 4);
  auto state = (*it)->Save();
  ASSERT_TRUE(state.ok());
  auto tail = Drain(it->get());

  auto fresh = MakeIt(ds);  // epoch 0 until restored
  ASSERT_TRUE(fresh->Restore(*state).ok());
  EXPECT_EQ(Drain(fresh.get()), tail);
  EXPECT_EQ(head.size() + tail.size(), 31u);
}

TEST(DatasetShardRecords, NamesTheSnapshotCounts) {
  EXPECT_EQ(Ids({5, 0, 7}).Shuffle(Seed7()).Shard(1, 2).Batch(2).shard_records(),
            (std::vector<uint64_t>{5, 0, 7}));
  EXPECT_TRUE(Ids({5}).Batch(0).shard_records().empty());  // an invalid dataset
}

}  // namespace
}  // namespace sluice::pipeline

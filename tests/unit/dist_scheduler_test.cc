// The scheduler on a fake clock with scripted worker events: who gets what, when (locality
// wait, speculation), and what becomes of every attempt's output.
#include <gtest/gtest.h>

#include "dist/map_phase.h"
#include "sluice/dist/scheduler.h"

namespace sluice::dist {
namespace {

std::vector<TaskSpec> Tasks(size_t n, std::vector<std::vector<std::string>> hosts = {}) {
  std::vector<TaskSpec> tasks(n);
  for (size_t i = 0; i < n; ++i) {
    tasks[i].id = i;
    tasks[i].bytes = 10;
    if (i < hosts.size()) tasks[i].hosts = hosts[i];
  }
  return tasks;
}

SchedulerOptions NoSpeculation() {
  SchedulerOptions o;
  o.speculation.enabled = false;
  return o;
}

TEST(DistScheduler, SendsOnlyWhenItHasBothAWorkerAndATask) {
  FakeClock clock;
  Scheduler s(Tasks(2), &clock, NoSpeculation());
  EXPECT_TRUE(s.Schedule().empty());  // tasks, no worker
  s.AddWorker(0, "a");
  auto first = s.Schedule();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].task, 0u);
  EXPECT_TRUE(s.Schedule().empty());  // a task, no idle worker
  s.AddWorker(1, "a");
  auto second = s.Schedule();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].rank, 1);
  EXPECT_EQ(second[0].task, 1u);
  EXPECT_EQ(s.TaskFinished(0, 0, 0), Outcome::kCommitted);
  EXPECT_TRUE(s.Schedule().empty());  // an idle worker, no task
  EXPECT_FALSE(s.finished());
  EXPECT_EQ(s.TaskFinished(1, 1, 0), Outcome::kCommitted);
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.committed_ranks(), (std::vector<Rank>{0, 1}));
}

TEST(DistScheduler, AFastWorkerTakesMoreTasksThanASlowOne) {
  FakeClock clock;
  Scheduler s(Tasks(10), &clock, NoSpeculation());
  s.AddWorker(0, "a");
  s.AddWorker(1, "a");
  std::map<Rank, int> done;
  std::map<Rank, Assignment> running;
  for (const auto& a : s.Schedule()) running[a.rank] = a;
  // Rank 0 finishes a task every second, rank 1 every 4 s.
  for (int t = 1; !s.finished(); ++t) {
    clock.Set(t);
    for (Rank r : {0, 1}) {
      if (!running.count(r) || (r == 1 && t % 4 != 0)) continue;
      EXPECT_EQ(s.TaskFinished(r, running[r].task, running[r].attempt), Outcome::kCommitted);
      ++done[r];
      running.erase(r);
    }
    for (const auto& a : s.Schedule()) running[a.rank] = a;
  }
  EXPECT_EQ(done[0] + done[1], 10);
  EXPECT_GE(done[0], 3 * done[1]);
}

TEST(DistScheduler, ARankTakesTheTaskWhoseInputIsOnItsNode) {
  FakeClock clock;
  Scheduler s(Tasks(3, {{"b"}, {"c"}, {"a"}}), &clock, NoSpeculation());
  s.AddWorker(0, "a");
  s.AddWorker(1, "b");
  s.AddWorker(2, "c");
  auto sent = s.Schedule();
  ASSERT_EQ(sent.size(), 3u);
  std::map<Rank, TaskId> got;
  for (const auto& a : sent) {
    got[a.rank] = a.task;
    EXPECT_TRUE(a.local);
  }
  EXPECT_EQ(got, (std::map<Rank, TaskId>{{0, 2}, {1, 0}, {2, 1}}));
  EXPECT_EQ(s.Progress().local_launches, 3u);
}

TEST(DistScheduler, ARemoteRankWaitsTheLocalityWaitThenRunsTheTask) {
  FakeClock clock(100);
  Scheduler s(Tasks(2, {{"a"}, {"a"}}), &clock, NoSpeculation());
  s.AddWorker(0, "a");
  s.AddWorker(1, "b");
  auto sent = s.Schedule();
  ASSERT_EQ(sent.size(), 1u);  // rank 0 takes one; rank 1 (node b) waits
  EXPECT_EQ(sent[0].rank, 0);
  EXPECT_DOUBLE_EQ(s.NextDecisionTime(), 103);
  clock.Set(102.9);
  EXPECT_TRUE(s.Schedule().empty());
  clock.Set(103);
  sent = s.Schedule();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].rank, 1);
  EXPECT_FALSE(sent[0].local);
  EXPECT_EQ(s.Progress().remote_launches, 1u);
}

TEST(DistScheduler, ALocalLaunchRestartsTheLocalityWait) {
  FakeClock clock;
  Scheduler s(Tasks(3, {{"a"}, {"a"}, {"a"}}), &clock, NoSpeculation());
  s.AddWorker(0, "a");
  s.AddWorker(1, "b");
  ASSERT_EQ(s.Schedule().size(), 1u);
  clock.Set(2);
  EXPECT_EQ(s.TaskFinished(0, 0, 0), Outcome::kCommitted);
  auto sent = s.Schedule();  // rank 0 launches task 1 locally at t=2
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].rank, 0);
  clock.Set(3.5);  // 3.5 s since the start, but only 1.5 s since the last local launch
  EXPECT_TRUE(s.Schedule().empty());
  EXPECT_DOUBLE_EQ(s.NextDecisionTime(), 5);
  clock.Set(5);
  sent = s.Schedule();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].rank, 1);
}

TEST(DistScheduler, NoWaitWhenNoRankIsOnTheInputsNodes) {
  FakeClock clock;
  Scheduler s(Tasks(2, {{"x", "y"}, {}}), &clock, NoSpeculation());
  s.AddWorker(0, "a");
  s.AddWorker(1, "b");
  EXPECT_EQ(s.Schedule().size(), 2u);
}

TEST(DistScheduler, ZeroLocalityWaitRunsAnywhereAtOnce) {
  FakeClock clock;
  SchedulerOptions o = NoSpeculation();
  o.locality.wait = 0;
  Scheduler s(Tasks(2, {{"a"}, {"a"}}), &clock, o);
  s.AddWorker(0, "a");
  s.AddWorker(1, "b");
  EXPECT_EQ(s.Schedule().size(), 2u);
}

// Speculation once 7 of the 8 tasks have finished (floor(0.875 * 8)).
SchedulerOptions AfterSevenOfEight() {
  SchedulerOptions o;
  o.speculation.quantile = 0.875;
  return o;
}

// Four ranks, eight tasks of 1 s; task 3 hangs on rank 3 until told otherwise.
class Speculation : public ::testing::Test {
 protected:
  void StartAndFinishAllBut3(SchedulerOptions options) {
    s_ = std::make_unique<Scheduler>(Tasks(8), &clock_, options);
    for (Rank r = 0; r < 4; ++r) s_->AddWorker(r, "n");
    auto sent = s_->Schedule();
    ASSERT_EQ(sent.size(), 4u);
    clock_.Set(1);
    for (Rank r : {0, 1, 2}) EXPECT_EQ(s_->TaskFinished(r, r, 0), Outcome::kCommitted);
    sent = s_->Schedule();  // tasks 4, 5, 6
    ASSERT_EQ(sent.size(), 3u);
    clock_.Set(2);
    for (const auto& a : sent) s_->TaskFinished(a.rank, a.task, a.attempt);
    sent = s_->Schedule();  // task 7 on one rank
    ASSERT_EQ(sent.size(), 1u);
    clock_.Set(3);
    s_->TaskFinished(sent[0].rank, sent[0].task, sent[0].attempt);
  }
  FakeClock clock_;
  std::unique_ptr<Scheduler> s_;
};

TEST_F(Speculation, AStragglerGetsACopyAndTheFirstToFinishIsCommitted) {
  StartAndFinishAllBut3(AfterSevenOfEight());
  // 7 of 8 done, median 1 s: task 3 (running since 0) is a straggler past 1.5 s.
  auto copies = s_->Schedule();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].task, 3u);
  EXPECT_EQ(copies[0].attempt, 1);
  EXPECT_TRUE(copies[0].speculative);
  EXPECT_NE(copies[0].rank, 3);
  clock_.Set(4);
  EXPECT_EQ(s_->TaskFinished(copies[0].rank, 3, 1), Outcome::kCommitted);
  auto cancel = s_->TakeCancellations();
  ASSERT_EQ(cancel.size(), 1u);
  EXPECT_EQ(cancel[0].rank, 3);
  EXPECT_EQ(cancel[0].attempt, 0);
  EXPECT_TRUE(s_->TakeCancellations().empty());  // each once
  EXPECT_EQ(s_->TaskFinished(3, 3, 0), Outcome::kDiscarded);
  EXPECT_TRUE(s_->finished());
  EXPECT_EQ(s_->committed_attempts()[3], 1);
  EXPECT_EQ(s_->Progress().speculative_wins, 1u);
}

// A frozen rank's original never reports: once its copy is committed, the job is done.
TEST_F(Speculation, AFrozenOriginalDoesNotHoldTheFinishedJob) {
  StartAndFinishAllBut3(AfterSevenOfEight());
  auto copies = s_->Schedule();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(s_->TaskFinished(copies[0].rank, 3, 1), Outcome::kCommitted);
  ASSERT_EQ(s_->TakeCancellations().size(), 1u);  // the original on rank 3, never answering
  EXPECT_TRUE(s_->finished());
  EXPECT_FALSE(s_->failed());
  EXPECT_EQ(s_->committed_ranks()[3], copies[0].rank);
  EXPECT_EQ(s_->TaskFinished(3, 3, 0), Outcome::kDiscarded);  // its late report changes nothing
  EXPECT_EQ(s_->committed_ranks()[3], copies[0].rank);
}

TEST_F(Speculation, TheOriginalFinishingFirstDiscardsTheCopy) {
  StartAndFinishAllBut3(AfterSevenOfEight());
  auto copies = s_->Schedule();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(s_->TaskFinished(3, 3, 0), Outcome::kCommitted);
  ASSERT_EQ(s_->TakeCancellations().size(), 1u);
  s_->TaskFailed(copies[0].rank, 3, 1, Cancelled("cancelled"));  // the copy's answer
  EXPECT_TRUE(s_->finished());
  EXPECT_FALSE(s_->failed());
  EXPECT_EQ(s_->committed_ranks()[3], 3);
}

TEST_F(Speculation, NoCopyBeforeTheQuantileOfTasksHasFinished) {
  SchedulerOptions o;
  o.speculation.quantile = 1.0;  // all 8 must finish first, which never happens here
  StartAndFinishAllBut3(o);
  EXPECT_TRUE(s_->Schedule().empty());
  EXPECT_EQ(s_->NextDecisionTime(), Scheduler::kNever);
}

TEST_F(Speculation, NoCopyBeforeTheMultipleOfTheMedian) {
  SchedulerOptions o;
  o.speculation.multiplier = 4;  // 4 x 1 s: task 3 (3 s so far) is not a straggler yet
  StartAndFinishAllBut3(o);
  EXPECT_TRUE(s_->Schedule().empty());
  EXPECT_DOUBLE_EQ(s_->NextDecisionTime(), 4);
  EXPECT_EQ(s_->Progress().stragglers, 0u);
  clock_.Set(4.01);
  EXPECT_EQ(s_->Progress().stragglers, 1u);
  EXPECT_EQ(s_->Schedule().size(), 1u);
}

TEST_F(Speculation, OffMeansNoCopies) {
  StartAndFinishAllBut3(NoSpeculation());
  clock_.Set(100);
  EXPECT_TRUE(s_->Schedule().empty());
}

TEST(DistScheduler, AFailedTaskFailsTheJobWithItsError) {
  FakeClock clock;
  Scheduler s(Tasks(3), &clock, NoSpeculation());
  s.AddWorker(0, "a");
  auto sent = s.Schedule();
  s.TaskFailed(0, sent[0].task, 0, DataLoss("rank 0 on a: x.jsonl: offset 7: bad"));
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.failure().message(), "rank 0 on a: x.jsonl: offset 7: bad");
  EXPECT_TRUE(s.Schedule().empty());
}

TEST(DistScheduler, AnIoErrorIsRetriedUpToMaxAttempts) {
  FakeClock clock;
  SchedulerOptions o = NoSpeculation();
  o.retry.max_attempts = 3;
  Scheduler s(Tasks(1), &clock, o);
  s.AddWorker(0, "a");
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto sent = s.Schedule();
    ASSERT_EQ(sent.size(), 1u) << attempt;
    EXPECT_EQ(sent[0].attempt, attempt);
    s.TaskFailed(0, 0, attempt, IoError("disk hiccup " + std::to_string(attempt)));
  }
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.failure().message(), "disk hiccup 2");
}

TEST(DistScheduler, AWorkerThatCannotStartFailsTheWholeJobWithOneReason) {
  FakeClock clock;
  Scheduler s(Tasks(4), &clock);
  s.AddWorker(0, "a");
  s.WorkerStartFailed(1, InvalidArgument("rank 1 on b: no tokenizer model"));
  s.WorkerStartFailed(2, InvalidArgument("rank 2 on c: no tokenizer model"));
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.failure().message(), "rank 1 on b: no tokenizer model");
  EXPECT_TRUE(s.Schedule().empty());
}

TEST(DistScheduler, AReportOfAnUnknownAttemptIsDiscarded) {
  FakeClock clock;
  Scheduler s(Tasks(1), &clock);
  s.AddWorker(0, "a");
  ASSERT_EQ(s.Schedule().size(), 1u);
  EXPECT_EQ(s.TaskFinished(1, 0, 0), Outcome::kDiscarded);  // wrong rank
  EXPECT_EQ(s.TaskFinished(0, 0, 5), Outcome::kDiscarded);  // no such attempt
  EXPECT_EQ(s.TaskFinished(0, 9, 0), Outcome::kDiscarded);  // no such task
  EXPECT_EQ(s.TaskFinished(0, 0, 0), Outcome::kCommitted);
  EXPECT_EQ(s.TaskFinished(0, 0, 0), Outcome::kDiscarded);  // twice
  EXPECT_TRUE(s.finished());
}

TEST(DistScheduler, AnEmptyJobIsFinishedAtOnce) {
  FakeClock clock;
  Scheduler s({}, &clock);
  EXPECT_TRUE(s.finished());
  s.AddWorker(0, "a");
  EXPECT_TRUE(s.Schedule().empty());
}

TEST(DistLocality, TheHostsHoldingTheMostBytesOfAShardArePreferred) {
  std::vector<io::BlockLocation> blocks(3);
  blocks[0] = {0, 128, {"a", "b", "c"}, {}, false};
  blocks[1] = {128, 128, {"b", "c", "d"}, {}, false};
  blocks[2] = {256, 10, {"d", "e", "f"}, {}, false};
  EXPECT_EQ(PreferredHosts(blocks), (std::vector<std::string>{"c", "b", "d"}));
  EXPECT_TRUE(PreferredHosts({{0, 100, {}, {}, false}}).empty());  // a local file: no hosts
}

TEST(DistDurationStats, MedianOfOddAndEvenCounts) {
  DurationStats d;
  EXPECT_EQ(d.median(), 0);
  for (double x : {5.0, 1.0, 3.0}) d.Add(x);
  EXPECT_EQ(d.median(), 3);
  d.Add(10);
  EXPECT_EQ(d.median(), 4);
  for (int i = 0; i < 100; ++i) d.Add(0.5);
  EXPECT_EQ(d.median(), 0.5);
}

}  // namespace
}  // namespace sluice::dist

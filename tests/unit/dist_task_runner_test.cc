// TaskRunner over an in-process group of ranks (threads): every task is committed exactly
// once, failures reach every rank as one reason, a slowed attempt gets a speculative copy.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "sluice/dist/task_runner.h"

namespace sluice::dist {
namespace {

std::vector<TaskSpec> Tasks(size_t n) {
  std::vector<TaskSpec> tasks(n);
  for (size_t i = 0; i < n; ++i) {
    tasks[i].id = i;
    tasks[i].input = "input-" + std::to_string(i);
  }
  return tasks;
}

// Returns "<input>@<rank>"; fails the tasks listed in `fail`.
class EchoHandler : public TaskHandler {
 public:
  EchoHandler(Rank rank, std::map<TaskId, Status> fail = {}, Status start = Status::OK())
      : rank_(rank), fail_(std::move(fail)), start_(std::move(start)) {}
  Status Start() override { return start_; }
  Result<std::string> Run(const TaskSpec& task, int, const io::CancelToken&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto it = fail_.find(task.id);
    if (it != fail_.end()) return it->second;
    return task.input + "@" + std::to_string(rank_);
  }

 private:
  Rank rank_;
  std::map<TaskId, Status> fail_;
  Status start_;
};

// Runs `phases` phases of `tasks` on `ranks` threads; handler(rank) makes each rank's handler.
std::vector<Result<TaskRunResult>> RunGroup(
    int ranks, const std::vector<TaskSpec>& tasks,
    std::function<std::unique_ptr<TaskHandler>(Rank)> handler, TaskRunnerOptions options = {},
    int phases = 1) {
  auto group = InProcessGroup(ranks);
  std::vector<Result<TaskRunResult>> out(ranks, Internal("not run"));
  std::vector<std::thread> threads;
  for (Rank r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      TaskRunner runner(group[r].get(), options);
      auto h = handler(r);
      for (int p = 0; p < phases; ++p) out[r] = runner.Run(tasks, h.get());
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST(DistTaskRunner, EveryTaskIsCommittedOnceAndEveryRankKnowsByWhom) {
  auto tasks = Tasks(40);
  auto out = RunGroup(4, tasks, [](Rank r) { return std::make_unique<EchoHandler>(r); });
  ASSERT_TRUE(out[0].ok()) << out[0].status().message();
  const TaskRunResult& root = *out[0];
  ASSERT_EQ(root.results.size(), 40u);
  for (size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(root.results[i], tasks[i].input + "@" + std::to_string(root.committed_rank[i]));
  }
  EXPECT_EQ(root.progress.committed, 40u);
  for (Rank r = 1; r < 4; ++r) {
    ASSERT_TRUE(out[r].ok());
    EXPECT_EQ(out[r]->committed_rank, root.committed_rank);
    EXPECT_EQ(out[r]->committed_attempt, root.committed_attempt);
  }
}

TEST(DistTaskRunner, OneProcessWithoutMpiRunsEverythingItself) {
  auto out = RunGroup(1, Tasks(5), [](Rank r) { return std::make_unique<EchoHandler>(r); });
  ASSERT_TRUE(out[0].ok());
  EXPECT_EQ(out[0]->results[4], "input-4@0");
  EXPECT_EQ(out[0]->committed_rank, std::vector<Rank>(5, 0));
}

TEST(DistTaskRunner, NoTasksIsAnEmptySuccess) {
  auto out = RunGroup(3, {}, [](Rank r) { return std::make_unique<EchoHandler>(r); });
  for (const auto& r : out) ASSERT_TRUE(r.ok());
}

TEST(DistTaskRunner, PhasesFollowEachOtherOnOneRunner) {
  auto out = RunGroup(
      3, Tasks(7), [](Rank r) { return std::make_unique<EchoHandler>(r); }, {},
      /*phases=*/3);
  ASSERT_TRUE(out[0].ok());
  EXPECT_EQ(out[0]->progress.committed, 7u);
}

TEST(DistTaskRunner, AFailedTaskFailsTheJobOnEveryRankWithOneTaggedReason) {
  auto out = RunGroup(4, Tasks(30), [](Rank r) {
    return std::make_unique<EchoHandler>(
        r, std::map<TaskId, Status>{{5, DataLoss("in.jsonl: offset 12: bad line")}});
  });
  for (Rank r = 0; r < 4; ++r) {
    ASSERT_FALSE(out[r].ok()) << r;
    EXPECT_EQ(out[r].status().code(), StatusCode::kDataLoss);
    EXPECT_NE(out[r].status().message().find("rank "), std::string::npos);
    EXPECT_NE(out[r].status().message().find(" on " + HostName() + ": in.jsonl: offset 12"),
              std::string::npos)
        << out[r].status().message();
    EXPECT_EQ(out[r].status().message(), out[0].status().message());
  }
}

TEST(DistTaskRunner, AWorkerThatCannotStartFailsTheWholeJob) {
  auto out = RunGroup(4, Tasks(10), [](Rank r) {
    return std::make_unique<EchoHandler>(
        r, std::map<TaskId, Status>{}, r == 2 ? NotFound("model.spm: no such file") : Status::OK());
  });
  for (Rank r = 0; r < 4; ++r) {
    ASSERT_FALSE(out[r].ok());
    EXPECT_EQ(out[r].status().message(), "rank 2 on " + HostName() + ": model.spm: no such file");
  }
}

TEST(DistTaskRunner, ASlowedAttemptGetsASpeculativeCopyAndIsCommittedOnce) {
  TaskRunnerOptions o;
  o.faults.slow_task = 3;
  o.faults.slow_task_seconds = 60;  // cancelled when the copy wins: the test takes ~0.2 s
  std::mutex mu;
  std::map<TaskId, int> commits;
  o.on_commit = [&](TaskId t, const std::string&) {
    std::lock_guard lock(mu);
    ++commits[t];
  };
  auto out = RunGroup(
      4, Tasks(12), [](Rank r) { return std::make_unique<EchoHandler>(r); }, o);
  ASSERT_TRUE(out[0].ok()) << out[0].status().message();
  EXPECT_EQ(out[0]->committed_attempt[3], 1);
  EXPECT_GE(out[0]->progress.speculative_copies, 1u);
  EXPECT_EQ(out[0]->progress.speculative_wins, 1u);
  EXPECT_EQ(commits.size(), 12u);
  for (const auto& [task, n] : commits) EXPECT_EQ(n, 1) << task;
}

TEST(DistTaskRunner, AnIoErrorIsRetriedOnAnotherAttempt) {
  // Task 2 fails with an I/O error on its first attempt only.
  class Flaky : public TaskHandler {
   public:
    Result<std::string> Run(const TaskSpec& t, int attempt, const io::CancelToken&) override {
      if (t.id == 2 && attempt == 0) return IoError("connection reset");
      return std::string("ok");
    }
  };
  auto out = RunGroup(2, Tasks(4), [](Rank) { return std::make_unique<Flaky>(); });
  ASSERT_TRUE(out[0].ok()) << out[0].status().message();
  EXPECT_EQ(out[0]->committed_attempt[2], 1);
}

}  // namespace
}  // namespace sluice::dist

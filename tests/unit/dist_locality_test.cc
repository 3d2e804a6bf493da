// Locality beyond HDFS block locations: which nodes a task prefers from the nodes' reports
// (cache tier holdings, node-local files), what the scheduler then decides on a fake clock,
// and the collective that gathers the reports over in-process ranks of different hosts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "sluice/dist/input_split.h"
#include "sluice/dist/locality.h"
#include "sluice/dist/scheduler.h"
#include "sluice/dist/simulation.h"
#include "sluice/io/cache/cache_admin.h"
#include "sluice/io/cache/cached_file_system.h"

namespace sluice::dist {
namespace {

std::vector<TaskSpec> Tasks(size_t n) {
  std::vector<TaskSpec> tasks(n);
  for (size_t i = 0; i < n; ++i) tasks[i].id = i, tasks[i].bytes = 100;
  return tasks;
}

SchedulerOptions NoSpeculation() {
  SchedulerOptions o;
  o.speculation.enabled = false;
  return o;
}

NodeHoldings Cached(std::string host, std::vector<double> fractions) {
  NodeHoldings h;
  h.host = std::move(host);
  h.cached_fraction = std::move(fractions);
  return h;
}

NodeHoldings LocalFiles(std::string host, std::vector<bool> local) {
  NodeHoldings h;
  h.host = std::move(host);
  h.local_file = std::move(local);
  return h;
}

// --- The hosts a task prefers, from the nodes' reports ---

TEST(DistLocality, NodesCachingMostOfAnInputArePreferredMostHeldFirst) {
  auto tasks = Tasks(2);
  AddHostsFromNodes({Cached("a", {0.6, 0.2}), Cached("b", {0.3}), Cached("c", {1.0, 0.49})}, {},
                    &tasks);
  EXPECT_EQ(tasks[0].hosts, (std::vector<std::string>{"c", "a"}));  // b holds under half
  EXPECT_FALSE(tasks[0].only_on_hosts);                             // others can still read it
  EXPECT_TRUE(tasks[1].hosts.empty());
}

TEST(DistLocality, TheCacheFractionIsSettable) {
  auto tasks = Tasks(1);
  LocalityOptions o;
  o.cache_fraction = 0.25;
  AddHostsFromNodes({Cached("a", {0.3})}, o, &tasks);
  EXPECT_EQ(tasks[0].hosts, (std::vector<std::string>{"a"}));
  tasks = Tasks(1);
  o.cache_fraction = 2;  // never
  AddHostsFromNodes({Cached("a", {1.0})}, o, &tasks);
  EXPECT_TRUE(tasks[0].hosts.empty());
}

TEST(DistLocality, CachingNodesFollowHdfsHostsOnceEach) {
  auto tasks = Tasks(1);
  tasks[0].hosts = {"dn1", "a"};
  AddHostsFromNodes({Cached("a", {0.9}), Cached("b", {0.8}), Cached("a", {0.7})}, {}, &tasks);
  EXPECT_EQ(tasks[0].hosts, (std::vector<std::string>{"dn1", "a", "b"}));
}

TEST(DistLocality, AFileOnSomeNodesOwnDisksRunsOnlyThere) {
  auto tasks = Tasks(3);
  AddHostsFromNodes({LocalFiles("a", {true, true, false}), LocalFiles("b", {false, true, false}),
                     LocalFiles("c", {true, true, false})},
                    {}, &tasks);
  EXPECT_EQ(tasks[0].hosts, (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(tasks[0].only_on_hosts);
  // On every node's disk (a copy on each): any node reads it locally, no preference.
  EXPECT_TRUE(tasks[1].hosts.empty());
  EXPECT_FALSE(tasks[1].only_on_hosts);
  // On no node-local disk (a shared file system): no preference.
  EXPECT_TRUE(tasks[2].hosts.empty());
}

TEST(DistLocality, ANodeLocalFileOverridesOtherNodesCaches) {
  auto tasks = Tasks(1);
  NodeHoldings a = LocalFiles("a", {true});
  NodeHoldings b = Cached("b", {1.0});
  AddHostsFromNodes({a, b}, {}, &tasks);
  EXPECT_EQ(tasks[0].hosts, (std::vector<std::string>{"a"}));  // b cannot open the file
  EXPECT_TRUE(tasks[0].only_on_hosts);
}

// --- What the scheduler decides with them (fake clock, scripted events) ---

TEST(DistLocality, EachRankTakesTheTaskItsNodeCaches) {
  FakeClock clock;
  auto tasks = Tasks(2);
  AddHostsFromNodes({Cached("a", {0, 1.0}), Cached("b", {1.0, 0})}, {}, &tasks);
  Scheduler s(tasks, &clock, NoSpeculation());
  s.AddWorker(0, "a");
  s.AddWorker(1, "b");
  auto got = s.Schedule();
  ASSERT_EQ(got.size(), 2u);
  // In input order rank 0 would take task 0; its node caches task 1.
  EXPECT_EQ(got[0].rank, 0);
  EXPECT_EQ(got[0].task, 1u);
  EXPECT_TRUE(got[0].local);
  EXPECT_EQ(got[1].rank, 1);
  EXPECT_EQ(got[1].task, 0u);
  EXPECT_TRUE(got[1].local);
  EXPECT_EQ(s.Progress().local_launches, 2u);
}

TEST(DistLocality, ATaskWaitsForItsCachingNodeThenRunsAnywhere) {
  FakeClock clock;
  auto tasks = Tasks(2);
  AddHostsFromNodes({Cached("b", {1.0, 1.0})}, {}, &tasks);
  Scheduler s(tasks, &clock, NoSpeculation());
  s.AddWorker(1, "b");
  ASSERT_EQ(s.Schedule().size(), 1u);  // rank 1 runs task 0 on the caching node
  s.AddWorker(0, "a");
  EXPECT_TRUE(s.Schedule().empty());  // task 1 waits for node b
  EXPECT_EQ(s.NextDecisionTime(), 3.0);
  clock.Set(2.9);
  EXPECT_TRUE(s.Schedule().empty());
  clock.Set(3.0);
  auto got = s.Schedule();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 0);
  EXPECT_EQ(got[0].task, 1u);
  EXPECT_FALSE(got[0].local);
  EXPECT_EQ(s.Progress().remote_launches, 1u);
}

TEST(DistLocality, ANodeLocalFileNeverRunsOnAnotherNode) {
  FakeClock clock;
  auto tasks = Tasks(2);
  AddHostsFromNodes({LocalFiles("b", {true, true}), LocalFiles("a", {false, false})}, {}, &tasks);
  Scheduler s(tasks, &clock, NoSpeculation());
  s.AddWorker(1, "b");
  ASSERT_EQ(s.Schedule().size(), 1u);
  s.AddWorker(0, "a");
  clock.Set(100);  // far past the locality wait
  EXPECT_TRUE(s.Schedule().empty());
  EXPECT_EQ(s.TaskFinished(1, 0, 0), Outcome::kCommitted);
  auto got = s.Schedule();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 1);
  EXPECT_EQ(got[0].task, 1u);
  EXPECT_EQ(s.TaskFinished(1, 1, 0), Outcome::kCommitted);
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.committed_ranks(), (std::vector<Rank>{1, 1}));
}

// A task whose input only a node without a rank holds fails the job once every rank has
// joined, naming the task and the node, instead of waiting forever.
TEST(DistLocality, ATaskOnlyAnAbsentNodeCanRunFailsTheJobOnceEveryRankJoined) {
  FakeClock clock;
  auto tasks = Tasks(2);
  tasks[1].hosts = {"z"};
  tasks[1].only_on_hosts = true;
  SchedulerOptions o = NoSpeculation();
  o.workers = 2;
  Scheduler s(tasks, &clock, o);
  s.AddWorker(0, "a");
  EXPECT_FALSE(s.failed());  // rank 1 may still be on z
  s.AddWorker(1, "b");
  ASSERT_TRUE(s.failed());
  EXPECT_EQ(s.failure().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.failure().message().find("task 1: its input is only on node(s) z"),
            std::string::npos)
      << s.failure().message();
  EXPECT_TRUE(s.Schedule().empty());
}

// Four tasks whose input is on node c; ranks on a, b, c, d; the one on a straggles.
class StragglerCopy : public ::testing::Test {
 protected:
  void Run(bool only_on_hosts) {
    auto tasks = Tasks(4);
    for (auto& t : tasks) t.hosts = {"c"}, t.only_on_hosts = only_on_hosts;
    SchedulerOptions o;
    o.locality.wait = 0;
    s_ = std::make_unique<Scheduler>(tasks, &clock_, o);
    s_->AddWorker(2, "c");
    s_->AddWorker(0, "a");
    s_->AddWorker(1, "b");
    s_->AddWorker(3, "d");
    for (const auto& a : s_->Schedule()) first_[a.task] = a.rank;
  }
  FakeClock clock_;
  std::unique_ptr<Scheduler> s_;
  std::map<TaskId, Rank> first_;
};

TEST_F(StragglerCopy, ACopyGoesToARankOnTheInputsNode) {
  Run(/*only_on_hosts=*/false);
  ASSERT_EQ(first_.size(), 4u);  // no wait: ranks off node c run tasks remotely
  ASSERT_EQ(first_[0], 2);
  // Every task but the one on rank 0 (node a) finishes at 1 s; rank 2 (node c) becomes idle
  // last, so a copy in idle order would go to another node.
  clock_.Set(1);
  for (auto [task, rank] : first_) {
    if (rank != 0 && rank != 2) s_->TaskFinished(rank, task, 0);
  }
  for (auto [task, rank] : first_) {
    if (rank == 2) s_->TaskFinished(rank, task, 0);
  }
  clock_.Set(2);  // past 1.5 x the median
  auto copies = s_->Schedule();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_TRUE(copies[0].speculative);
  EXPECT_EQ(copies[0].rank, 2);
  EXPECT_TRUE(copies[0].local);
}

TEST_F(StragglerCopy, ANodeLocalTasksCopyWaitsForItsNode) {
  Run(/*only_on_hosts=*/true);
  ASSERT_EQ(first_.size(), 1u);  // only rank 2 (node c) may run them
  // Rank 2 finishes three tasks in 1 s each; the fourth runs long.
  for (int i = 1; i <= 3; ++i) {
    auto [task, rank] = *first_.begin();
    clock_.Set(i);
    s_->TaskFinished(rank, task, 0);
    first_.clear();
    for (const auto& a : s_->Schedule()) first_[a.task] = a.rank;
    ASSERT_EQ(first_.size(), 1u);
    EXPECT_EQ(first_.begin()->second, 2);
  }
  clock_.Set(10);  // the last task straggles; only ranks off node c are idle
  EXPECT_TRUE(s_->Schedule().empty());
  EXPECT_EQ(s_->Progress().speculative_copies, 0u);
}

// --- The collective, over in-process ranks on two "nodes" ---

TEST(DistLocality, GatherPrefersTheNodeWhoseCacheHoldsAShard) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("sluice-locality-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache-x");
  fs::create_directories(dir / "cache-y");
  // A "remote" file system (memory) whose shard 0 node x has read through its cache tier.
  auto remote = io::NewMemoryFileSystem();
  ASSERT_TRUE(remote->WriteAll("/remote/shard-0", std::string(256 << 10, 'a')).ok());
  ASSERT_TRUE(remote->WriteAll("/remote/shard-1", std::string(256 << 10, 'b')).ok());
  io::cache::CacheOptions co;
  co.dir = (dir / "cache-x").string();
  co.capacity_bytes = 64 << 20;
  co.block_bytes = 64 << 10;
  auto cached = io::cache::CachedFileSystemFor(remote.get(), co);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  ASSERT_TRUE(io::cache::WarmFiles(*cached, {"/remote/shard-0"}, 2).ok());

  // Ranks 0, 1 on node "y" (an empty cache), ranks 2, 3 on node "x".
  auto group = InProcessGroup(4, {"y", "y", "x", "x"});
  std::vector<std::vector<TaskSpec>> seen(4);
  std::vector<Status> status(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      auto tasks = Tasks(2);
      for (auto& t : tasks) {
        t.input = "/remote/shard-" + std::to_string(t.id);
        t.bytes = 256 << 10;
      }
      LocalityOptions o;
      o.cache_dir = (dir / (r < 2 ? "cache-y" : "cache-x")).string();
      status[r] = GatherNodeLocality(
          group[r].get(), remote->name(),
          [](const TaskSpec& t) {
            return TaskFile{t.input, t.bytes};
          },
          o, &tasks);
      seen[r] = tasks;
    });
  }
  for (auto& t : threads) t.join();
  fs::remove_all(dir);
  for (const auto& s : status) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen[0][0].hosts, (std::vector<std::string>{"x"}));  // rank 0's plan
  EXPECT_FALSE(seen[0][0].only_on_hosts);
  EXPECT_TRUE(seen[0][1].hosts.empty());  // cached nowhere
  EXPECT_TRUE(seen[2][0].hosts.empty());  // other ranks' tasks are left alone
}

TEST(DistLocality, IsNodeLocalFile) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("sluice-nodelocal-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string file = (dir / "a.txt").string();
  std::ofstream(file) << "x";
  EXPECT_TRUE(IsNodeLocalFile(file, {dir.string()}));
  EXPECT_TRUE(IsNodeLocalFile(file, {dir.string() + "/"}));
  EXPECT_FALSE(IsNodeLocalFile((dir / "absent").string(), {dir.string()}));
  EXPECT_FALSE(IsNodeLocalFile(dir.string(), {}));  // a directory is no input file
  fs::remove_all(dir);
}

TEST(DistLocality, AConversionsFileTaskNamesItsLocalFileOnly) {
  TaskSpec t;
  t.input = FileRange{"/scratch/part-1.jsonl", 0, 10, false}.Encode();
  EXPECT_EQ(LocalFileOfFileTask(t).path, "/scratch/part-1.jsonl");
  EXPECT_EQ(LocalFileOfFileTask(t).bytes, 0u);  // a range: no cache lookup
  t.input = FileRange{"s3://bucket/part-1.jsonl", 0, 10, true}.Encode();
  EXPECT_EQ(LocalFileOfFileTask(t).path, "");
  t.input = "not a file task";
  EXPECT_EQ(LocalFileOfFileTask(t).path, "");
}

// --- The simulation charges remote reads, whatever the scheduler believed ---

TEST(DistLocality, ALocalityBlindSchedulerPaysForRemoteReadsOnASlowNetwork) {
  SimulationOptions o;
  o.ranks = 40;
  o.tasks = 400;
  o.slow_rank_fraction = 0;
  o.network_bytes_per_second = 1.25e8 / 4;  // 1 GbE per node of 4 ranks
  o.scheduler.speculation.enabled = false;
  SimulationOptions blind = o;
  blind.tell_hosts = false;
  auto p = Simulate(o);
  auto b = Simulate(blind);
  EXPECT_EQ(b.progress.local_launches + b.progress.remote_launches, 0u);  // it knew nothing
  EXPECT_GT(b.remote_reads, b.local_reads);  // 3 of 10 nodes hold each input
  EXPECT_GT(p.local_reads, p.remote_reads);
  EXPECT_LT(p.job_seconds, b.job_seconds);
}

TEST(DistLocality, ARemoteReadTakesItsBytesAtTheNetworkRate) {
  SimulationOptions o;
  o.ranks = 1;
  o.ranks_per_node = 1;
  o.tasks = 1;
  o.sigma = 0;  // compute exactly the median
  o.slow_rank_fraction = 0;
  o.replicas = 0;  // the input on no node: a remote read
  o.task_bytes = 100'000'000;
  o.disk_bytes_per_second = 200e6;
  o.network_bytes_per_second = 50e6;
  EXPECT_DOUBLE_EQ(Simulate(o).job_seconds, 10 + 2.0);
  o.network_bytes_per_second = 400e6;  // a fast link: the remote disk is the limit
  EXPECT_DOUBLE_EQ(Simulate(o).job_seconds, 10 + 0.5);
  o.replicas = 1;  // on the rank's own node
  o.network_bytes_per_second = 50e6;
  EXPECT_DOUBLE_EQ(Simulate(o).job_seconds, 10 + 0.5);
}

}  // namespace
}  // namespace sluice::dist

#include "sluice/format/dataset_publisher.h"

#include <gtest/gtest.h>

#include <set>

#include "publish_test_util.h"

namespace sluice::format {
namespace {

using testing::FakeProcesses;

class DatasetPublisherTest : public ::testing::Test {
 protected:
  Result<std::unique_ptr<DatasetPublisher>> Begin(int64_t pid, bool overwrite = false) {
    PublishOptions options;
    options.overwrite = overwrite;
    options.command = "test";
    options.probe = processes_.As(pid);
    return DatasetPublisher::Begin(fs_.get(), "/ds", options);
  }
  // Writes a shard-like file of the publisher's run and a manifest entry for it.
  void AddShard(DatasetPublisher* p, Manifest* m, const std::string& content) {
    auto name = p->WriteFile("data", "-00000.tfrecord", content);
    ASSERT_TRUE(name.ok()) << name.status().ToString();
    m->shards.push_back({*name, 1, content.size(), ""});
  }
  std::set<std::string> Names() { return testing::FileNames(fs_.get(), "/ds"); }
  std::string PublishedRun() {
    auto m = Manifest::Load(fs_.get(), "/ds");
    return m.ok() ? m->run : "(" + m.status().message() + ")";
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  FakeProcesses processes_;
};

TEST(RunIdTest, FreshIdsAndFileNames) {
  std::string a = NewRunId(), b = NewRunId();
  EXPECT_TRUE(IsRunId(a));
  EXPECT_NE(a, b);
  EXPECT_EQ(RunIdOfFileName("data-0123456789ab-00000.tfrecord.zst"), "0123456789ab");
  EXPECT_EQ(RunIdOfFileName("data-0123456789ab-r0003-00001.tfrecord.zst.idx"), "0123456789ab");
  EXPECT_EQ(RunIdOfFileName("classes-0123456789ab.txt"), "0123456789ab");
  EXPECT_EQ(RunIdOfFileName("my-prefix-0123456789ab-00000.tfrecord.tmp-3-4"), "0123456789ab");
  EXPECT_EQ(RunIdOfFileName("data-00000-of-00004.tfrecord.zst"), std::nullopt);
  EXPECT_EQ(RunIdOfFileName("data-0123456789AB-00000.tfrecord"), std::nullopt);   // not lower hex
  EXPECT_EQ(RunIdOfFileName("data-0123456789abc-00000.tfrecord"), std::nullopt);  // 13 digits
  EXPECT_EQ(RunIdOfFileName("x-0123456789ab"), std::nullopt);  // nothing after the id
}

TEST_F(DatasetPublisherTest, CommitPublishesTheManifestAndReleasesTheLock) {
  auto p = Begin(11);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Manifest m;
  AddShard(p->get(), &m, "abc");
  EXPECT_FALSE(fs_->Exists("/ds/dataset.json"));
  ASSERT_TRUE((*p)->Commit(m).ok());
  EXPECT_EQ(PublishedRun(), (*p)->run_id());
  auto lock = WriterLock::ReadState(fs_.get(), "/ds");
  ASSERT_TRUE(lock.ok() && lock->has_value());
  EXPECT_TRUE((*lock)->released);
  EXPECT_EQ(Names(), (std::set<std::string>{"data-" + (*p)->run_id() + "-00000.tfrecord",
                                            "dataset.json", ".sluice-lock.2"}));
}

TEST_F(DatasetPublisherTest, SecondWriterIsRefusedBeforeItWritesAnything) {
  auto first = Begin(11);
  ASSERT_TRUE(first.ok());
  Manifest m;
  AddShard(first->get(), &m, "abc");
  const std::set<std::string> before = Names();
  auto second = Begin(12);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("being written by another writer"), std::string::npos);
  EXPECT_EQ(Names(), before);
  ASSERT_TRUE((*first)->Commit(m).ok());

  auto third = Begin(13);  // sequentially: the published dataset refuses it
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(third.status().message().find("/ds/dataset.json exists: refusing to write a dataset "
                                          "over another one (--overwrite replaces it"),
            std::string::npos)
      << third.status().ToString();
}

// Even when the lock is wrongly taken over (a writer judged dead that is not), put-if-absent
// at the commit point lets exactly one dataset through, and never a mix.
TEST_F(DatasetPublisherTest, BrokenLockStillNeverMixesDatasets) {
  auto a = Begin(11);
  ASSERT_TRUE(a.ok());
  processes_.Kill(11);  // misjudged: A keeps running
  auto b = Begin(12);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Manifest ma, mb;
  AddShard(a->get(), &ma, "from a");
  AddShard(b->get(), &mb, "from b");
  ASSERT_TRUE((*a)->Commit(ma).ok());
  Status lost = (*b)->Commit(mb);
  EXPECT_EQ(lost.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(lost.message().find("published by another writer while run " + (*b)->run_id()),
            std::string::npos)
      << lost.ToString();
  EXPECT_EQ(PublishedRun(), (*a)->run_id());
  EXPECT_TRUE(fs_->Exists("/ds/" + ma.shards[0].path));
  EXPECT_FALSE(fs_->Exists("/ds/" + mb.shards[0].path));  // the loser cleaned up after itself
}

TEST_F(DatasetPublisherTest, OverwriteKeepsTheOldDatasetVisibleUntilTheCommit) {
  auto a = Begin(11);
  ASSERT_TRUE(a.ok());
  Manifest ma;
  AddShard(a->get(), &ma, "old");
  ASSERT_TRUE((*a)->Commit(ma).ok());

  auto b = Begin(12, /*overwrite=*/true);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Manifest mb;
  AddShard(b->get(), &mb, "new!");
  auto during = ResolveShards(fs_.get(), "/ds");
  ASSERT_TRUE(during.ok()) << during.status().ToString();
  EXPECT_EQ(*during, std::vector<std::string>{"/ds/" + ma.shards[0].path});
  ASSERT_TRUE((*b)->Commit(mb).ok());
  EXPECT_EQ(PublishedRun(), (*b)->run_id());
  EXPECT_EQ(Names(), (std::set<std::string>{mb.shards[0].path, "dataset.json", ".sluice-lock.4"}));
}

TEST_F(DatasetPublisherTest, AbortDeletesTheRunsFilesAndReleases) {
  auto a = Begin(11);
  ASSERT_TRUE(a.ok());
  Manifest m;
  AddShard(a->get(), &m, "abc");
  a->reset();  // destroyed without Commit
  EXPECT_EQ(Names(), std::set<std::string>{".sluice-lock.2"});
  EXPECT_TRUE(Begin(12).ok());
}

TEST_F(DatasetPublisherTest, NextRunReclaimsADeadRunsFiles) {
  ASSERT_TRUE(fs_->CreateDirs("/ds").ok());
  LockEntry dead;
  dead.run = "aaaaaaaaaaaa";
  dead.writer = {11, "here", 0};
  ASSERT_TRUE(fs_->PutIfAbsent("/ds/.sluice-lock.1", dead.ToJson()).ok());
  ASSERT_TRUE(fs_->WriteAll("/ds/data-aaaaaaaaaaaa-00000.tfrecord", "x").ok());
  ASSERT_TRUE(fs_->WriteAll("/ds/user-notes.txt", "mine").ok());  // not a run's: kept
  processes_.Kill(11);
  auto next = Begin(12);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  ASSERT_EQ((*next)->reclaimed().size(), 1u);
  EXPECT_EQ((*next)->reclaimed()[0].path, "/ds/data-aaaaaaaaaaaa-00000.tfrecord");
  EXPECT_EQ(Names(), (std::set<std::string>{".sluice-lock.2", "user-notes.txt"}));
}

TEST_F(DatasetPublisherTest, FindLeftoversSparesThePublishedDatasetAndLiveWriters) {
  ASSERT_TRUE(fs_->CreateDirs("/ds").ok());
  Manifest published;
  published.run = "aaaaaaaaaaaa";
  published.shards = {{"data-aaaaaaaaaaaa-00000.tfrecord", 1, 1, ""}};
  published.metadata["classes_file"] = "classes-aaaaaaaaaaaa.txt";
  for (const char* f : {"data-aaaaaaaaaaaa-00000.tfrecord", "classes-aaaaaaaaaaaa.txt",
                        "data-aaaaaaaaaaaa-00000.tfrecord.tmp-5-1",  // its run, but unused
                        "data-bbbbbbbbbbbb-00000.tfrecord",          // a dead run's
                        "data-cccccccccccc-00000.tfrecord",          // the live writer's
                        "dataset.json.put.tmp-77-0",                 // the live writer's
                        ".sluice-lock.1.put.tmp-11-3",               // a dead acquirer's
                        ".sluice-lock.1.put.tmp-12-3",               // a live acquirer's
                        "data-00000-of-00001.tfrecord"}) {           // not named by a run
    ASSERT_TRUE(fs_->WriteAll(std::string("/ds/") + f, "x").ok());
  }
  LockEntry live;
  live.run = "cccccccccccc";
  live.writer = {12, "here", 0};
  ASSERT_TRUE(fs_->PutIfAbsent("/ds/.sluice-lock.3", live.ToJson()).ok());
  ASSERT_TRUE(fs_->WriteAll("/ds/.sluice-lock.2", "superseded").ok());
  processes_.Kill(11);
  auto leftovers = FindLeftovers(fs_.get(), "/ds", &published, {}, processes_.As(99));
  ASSERT_TRUE(leftovers.ok()) << leftovers.status().ToString();
  std::set<std::string> found;
  for (const auto& l : *leftovers) found.insert(l.path);
  EXPECT_EQ(found, (std::set<std::string>{
                       "/ds/.sluice-lock.2", "/ds/data-aaaaaaaaaaaa-00000.tfrecord.tmp-5-1",
                       "/ds/data-bbbbbbbbbbbb-00000.tfrecord", "/ds/.sluice-lock.1.put.tmp-11-3"}));
}

}  // namespace
}  // namespace sluice::format

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sluice/format/manifest.h"
#include "sluice/format/writer_lock.h"

namespace sluice::format {
namespace {

using Paths = std::vector<std::string>;

class ResolveShardsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_->CreateDirs("/ds").ok()); }
  void Touch(const std::string& path) { ASSERT_TRUE(fs_->WriteAll(path, "x").ok()) << path; }
  Result<Paths> Resolve(const std::string& path) { return ResolveShards(fs_.get(), path); }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
};

TEST_F(ResolveShardsTest, ShardFileIsItself) {
  Touch("/ds/a.tfrecord");
  auto r = Resolve("/ds/a.tfrecord");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, Paths{"/ds/a.tfrecord"});
}

TEST_F(ResolveShardsTest, DirectoryWithManifestKeepsManifestOrder) {
  Manifest m;
  m.shards = {{"b.tfrecord.zst", 1, 1, ""}, {"a.tfrecord.zst", 1, 1, ""}};
  ASSERT_TRUE(m.Save(fs_.get(), "/ds").ok());
  Touch("/ds/a.tfrecord.zst");
  Touch("/ds/b.tfrecord.zst");
  Touch("/ds/stray.tfrecord.zst");  // not in the manifest: not part of the dataset
  auto r = Resolve("/ds");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (Paths{"/ds/b.tfrecord.zst", "/ds/a.tfrecord.zst"}));
}

TEST_F(ResolveShardsTest, DirectoryWithBadManifestNamesIt) {
  Touch("/ds/a.tfrecord");
  ASSERT_TRUE(fs_->WriteAll("/ds/dataset.json", "{not json").ok());
  auto r = Resolve("/ds");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("/ds/dataset.json"), std::string::npos);
}

TEST_F(ResolveShardsTest, DirectoryWithoutManifestListsShardsSorted) {
  Touch("/ds/b.tfrecord.gz");
  Touch("/ds/a.tfrecord");
  Touch("/ds/a.tfrecord.idx");
  Touch("/ds/c.tfrecord.zst.tmp-12-3");
  Touch("/ds/notes.txt");
  auto r = Resolve("/ds");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (Paths{"/ds/a.tfrecord", "/ds/b.tfrecord.gz"}));
}

TEST_F(ResolveShardsTest, DirectoryWithoutShardsIsNotFound) {
  Touch("/ds/notes.txt");
  auto r = Resolve("/ds");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/ds"), std::string::npos);
}

TEST_F(ResolveShardsTest, GlobIsSortedAndSkipsIndexes) {
  Touch("/ds/train-2.tfrecord");
  Touch("/ds/train-1.tfrecord");
  Touch("/ds/train-1.tfrecord.idx");
  Touch("/ds/test-1.tfrecord");
  auto r = Resolve("/ds/train-*");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (Paths{"/ds/train-1.tfrecord", "/ds/train-2.tfrecord"}));
}

TEST_F(ResolveShardsTest, GlobMatchingNothingIsNotFound) {
  auto r = Resolve("/ds/*.tfrecord");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/ds/*.tfrecord"), std::string::npos);
}

TEST_F(ResolveShardsTest, MissingPathIsNotFound) {
  auto r = Resolve("/ds/missing.tfrecord");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/ds/missing.tfrecord"), std::string::npos);
}

// A crashed writer's shards are never read as a (smaller) dataset.
TEST_F(ResolveShardsTest, UnpublishedRunShardsAreRefused) {
  Touch("/ds/data-0123456789ab-00000.tfrecord.zst");
  Touch("/ds/data-0123456789ab-00000.tfrecord.zst.idx");
  auto r = Resolve("/ds");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("no dataset.json"), std::string::npos);
  EXPECT_NE(r.status().message().find("run 0123456789ab, which never published"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("sluice clean /ds"), std::string::npos);
}

TEST_F(ResolveShardsTest, DirectoryUnderAWritersLockIsRefused) {
  WriterLockOptions options;
  options.run = "0123456789ab";
  options.command = "sluice convert jsonl";
  auto lock = WriterLock::Acquire(fs_.get(), "/ds", options);
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  Touch("/ds/a.tfrecord");  // whatever else is here, the writer has not published
  auto r = Resolve("/ds");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("unpublished output of a writer (run 0123456789ab "
                                      "(sluice convert jsonl), pid"),
            std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("may still be running"), std::string::npos);
  ASSERT_TRUE((*lock)->Release().ok());
  EXPECT_TRUE(Resolve("/ds").ok());  // released: a plain directory of shards again
}

TEST_F(ResolveShardsTest, ShardDisagreeingWithManifestIsNamed) {
  Manifest m;
  m.shards = {{"a.tfrecord", 10, 1000, ""}, {"b.tfrecord", 5, 500, ""}};
  ASSERT_TRUE(m.Save(fs_.get(), "/ds").ok());
  auto dataset = ResolveDataset(fs_.get(), "/ds");
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  EXPECT_TRUE(CheckShardMatchesManifest(*dataset, 1, 500, 5).ok());
  EXPECT_TRUE(CheckShardMatchesManifest(*dataset, 1, 500, std::nullopt).ok());
  Status small = CheckShardMatchesManifest(*dataset, 1, 480, 5);
  EXPECT_EQ(small.code(), StatusCode::kDataLoss);
  EXPECT_NE(small.message().find("/ds/dataset.json: shards[1] b.tfrecord: the manifest says 500 "
                                 "bytes, the shard file has 480"),
            std::string::npos)
      << small.ToString();
  Status fewer = CheckShardMatchesManifest(*dataset, 0, 1000, 7);
  EXPECT_NE(fewer.message().find("shards[0] a.tfrecord: the manifest says 10 records, the "
                                 "shard holds 7"),
            std::string::npos)
      << fewer.ToString();
}

// A symbolic link inside the dataset that points out of it is refused like "..".
TEST(ResolveShardsLocalTest, SymlinkOutOfTheDatasetIsRefused) {
  char tmpl[] = "/tmp/sluice_resolve_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  io::FileSystem* fs = io::LocalFileSystem();
  ASSERT_TRUE(fs->CreateDirs(root + "/ds").ok());
  ASSERT_TRUE(fs->WriteAll(root + "/outside.tfrecord", "x").ok());
  ASSERT_TRUE(fs->WriteAll(root + "/ds/inside.tfrecord", "x").ok());
  ASSERT_EQ(::symlink("inside.tfrecord", (root + "/ds/good.tfrecord").c_str()), 0);
  ASSERT_EQ(::symlink((root + "/outside.tfrecord").c_str(), (root + "/ds/bad.tfrecord").c_str()),
            0);
  Manifest m;
  m.shards = {{"good.tfrecord", 1, 1, ""}};
  ASSERT_TRUE(m.Save(fs, root + "/ds").ok());
  EXPECT_TRUE(ResolveShards(fs, root + "/ds").ok());

  ASSERT_TRUE(fs->Delete(root + "/ds/dataset.json").ok());
  m.shards.push_back({"bad.tfrecord", 1, 1, ""});
  ASSERT_TRUE(m.Save(fs, root + "/ds").ok());
  auto r = ResolveShards(fs, root + "/ds");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(root + "/ds/dataset.json: shards[1].path: resolves to " +
                                      root + "/outside.tfrecord, outside the dataset directory"),
            std::string::npos)
      << r.status().ToString();
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace sluice::format

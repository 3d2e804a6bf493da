#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/format/manifest.h"

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

}  // namespace
}  // namespace sluice::format

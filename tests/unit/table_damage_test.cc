// Damaged and hostile table logs (issue 35): empty or non-JSON commit files, JSON nested
// deep enough to overflow a recursive parser, oversized lines, and data paths that leave the
// table root through a symbolic link. Each is an error naming the version and the log file;
// versions before the damage stay readable; nothing outside the root is read or deleted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "record_test_util.h"
#include "sluice/table/table.h"
#include "table/log_json.h"
#include "table/log_path.h"
#include "table_test_util.h"

namespace sluice::table {
namespace {

using format::testing::TempDir;
using testing::AtVersion;
using testing::ManualClock;
using testing::Paths;
using testing::ReadAll;
using testing::WriteShard;

constexpr const char* kRoot = "/t";

std::string CommitPath(int64_t version) {
  return std::string(kRoot) + "/_delta_log/" + CommitFileName(version);
}

void ExpectDataLossNaming(const Status& s, int64_t version) {
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find(CommitPath(version)), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("(version " + std::to_string(version) + ")"), std::string::npos)
      << s.ToString();
}

class TableDamageTest : public ::testing::Test {
 protected:
  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();

  // Versions 0..n-1, each appending one shard of 3 records.
  void Commit(int n) {
    for (int v = 0; v < n; ++v) {
      auto r = Table::Append(fs_.get(), kRoot, {WriteShard(fs_.get(), kRoot, 3 * v, 3)});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }
  void Replace(int64_t version, const std::string& text) {
    ASSERT_TRUE(fs_->Delete(CommitPath(version)).ok());
    ASSERT_TRUE(fs_->WriteAll(CommitPath(version), text).ok());
  }
  // The damaged latest version is refused on open and on refresh; the version before it
  // still reads whole.
  void ExpectRefusedFromVersion(int64_t version) {
    auto latest = Table::Open(fs_.get(), kRoot);
    ASSERT_FALSE(latest.ok()) << "opened version " << latest->version();
    ExpectDataLossNaming(latest.status(), version);
    auto before = Table::Open(fs_.get(), kRoot, AtVersion(version - 1));
    ASSERT_TRUE(before.ok()) << before.status().ToString();
    EXPECT_EQ(ReadAll(*before).size(), static_cast<size_t>(3 * version));
    ExpectDataLossNaming(before->Refresh(), version);
  }
};

TEST_F(TableDamageTest, EmptyCommitFileIsDataLossNamingVersionAndFile) {
  Commit(3);
  Replace(2, "");
  ExpectRefusedFromVersion(2);
}

TEST_F(TableDamageTest, WhitespaceOnlyCommitFileIsDataLoss) {
  Commit(3);
  Replace(2, "\n  \n\t\n");
  ExpectRefusedFromVersion(2);
}

TEST_F(TableDamageTest, NonJsonCommitFileIsDataLossNamingVersionAndFile) {
  Commit(3);
  Replace(2, "this is not a commit\n");
  ExpectRefusedFromVersion(2);
}

// A commitInfo of 70,000 nested arrays: parsed and printed recursively, it overflowed the
// reader's stack (SIGSEGV) in Table::Open, History, and every loader.
TEST_F(TableDamageTest, DeeplyNestedCommitInfoIsDataLossNotACrash) {
  Commit(2);
  std::string line = R"({"commitInfo":{"operation":"WRITE","nested":)";
  line += std::string(70000, '[') + std::string(70000, ']') + "}}\n";
  ASSERT_TRUE(fs_->WriteAll(CommitPath(2), line).ok());
  auto t = Table::Open(fs_.get(), kRoot);
  ASSERT_FALSE(t.ok());
  ExpectDataLossNaming(t.status(), 2);
  EXPECT_NE(t.status().message().find("nested more than"), std::string::npos)
      << t.status().ToString();
  auto v1 = Table::Open(fs_.get(), kRoot, AtVersion(1));
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  auto history = v1->History();  // reads every commit's commitInfo, the deep one included
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  EXPECT_EQ(history->size(), 2u);
}

TEST_F(TableDamageTest, OversizedLogLineIsDataLossNamingTheLine) {
  Commit(2);
  std::string line = R"({"commitInfo":{"operation":"WRITE","pad":")";
  line += std::string(kMaxLogLineBytes, 'x') + "\"}}\n";
  ASSERT_TRUE(fs_->WriteAll(CommitPath(2), line).ok());
  auto t = Table::Open(fs_.get(), kRoot);
  ASSERT_FALSE(t.ok());
  ExpectDataLossNaming(t.status(), 2);
  EXPECT_NE(t.status().message().find("line 1: a line of"), std::string::npos)
      << t.status().ToString();
}

TEST(TableLogJson, NestingIsCountedOutsideStringsOnly) {
  EXPECT_FALSE(JsonNestsDeeperThan(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_TRUE(JsonNestsDeeperThan(R"({"a":[1,{"b":[]}]})", 3));
  EXPECT_FALSE(JsonNestsDeeperThan(R"(["[[[[", "{{{{"])", 1));
  EXPECT_FALSE(JsonNestsDeeperThan(R"(["\"[[[[\\", "]"])", 1));  // escaped quote, backslash
  EXPECT_TRUE(JsonNestsDeeperThan(std::string(kMaxLogJsonDepth + 1, '['), kMaxLogJsonDepth));
  EXPECT_TRUE(ParseLogJson(std::string(100000, '[') + std::string(100000, ']')).is_discarded());
  EXPECT_EQ(ParseLogJson(R"({"a":[[1]]})")["a"][0][0], 1);
}

// A table on local disk with version 0 holding one shard of its own, and version 1 adding
// "link/<shard>" where `link` is a symbolic link to a directory outside the table.
class TableSymlinkTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  io::FileSystem* fs_ = io::LocalFileSystem();
  std::string root_ = tmp_.path() + "/t";
  std::string outside_ = tmp_.path() + "/outside";
  ManualClock clock_;

  void SetUp() override {
    ASSERT_TRUE(Table::Append(fs_, root_, {WriteShard(fs_, root_, 0, 3)}, Options()).ok());
    DataFile out = WriteShard(fs_, outside_, 100, 3);  // records no version of t holds
    ASSERT_EQ(::symlink(outside_.c_str(), (root_ + "/link").c_str()), 0);
    ASSERT_TRUE(fs_->WriteAll(outside_ + "/notes.txt", "not the table's").ok());
    out.path = "link/" + out.path;
    out.tags.clear();
    ASSERT_TRUE(Table::Append(fs_, root_, {out}, Options()).ok());
    clock_.Advance(int64_t{30} * 24 * 3600 * 1000);  // every file is past any retention
  }
  CommitOptions Options() {
    CommitOptions o;
    o.clock = clock_.fn();
    return o;
  }
  void ExpectRefusedNamingTheCommit(const Status& s) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    for (const std::string& part :
         {std::string("version 1"), "_delta_log/" + CommitFileName(1), std::string("'link/"),
          std::string("a symbolic link pointing out")}) {
      EXPECT_NE(s.message().find(part), std::string::npos) << part << " in " << s.ToString();
    }
  }
};

TEST_F(TableSymlinkTest, ReadOfAPathThroughASymlinkOutIsRefused) {
  auto read = ResolveTableRead(fs_, root_);
  ASSERT_FALSE(read.ok()) << "read " << (*read)->files.size() << " files";
  ExpectRefusedNamingTheCommit(read.status());
  auto v0 = ResolveTableRead(fs_, root_ + "@v0");  // the version before it is whole
  ASSERT_TRUE(v0.ok()) << v0.status().ToString();
  EXPECT_EQ((*v0)->files.size(), 1u);
}

TEST_F(TableSymlinkTest, OptimizeDoesNotCopyRecordsFromOutside) {
  auto t = Table::Open(fs_, root_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  OptimizeOptions o;
  o.commit = Options();
  auto r = t->Optimize(o);
  ASSERT_FALSE(r.ok()) << "committed version " << r->commit.version;
  ExpectRefusedNamingTheCommit(r.status());
  EXPECT_EQ(Table::Open(fs_, root_)->version(), 1);
}

TEST_F(TableSymlinkTest, VacuumRefusesAndDeletesNothingOutside) {
  auto t = Table::Open(fs_, root_);
  ASSERT_TRUE(t.ok());
  VacuumOptions v;
  v.retention_hours = 0;
  v.enforce_retention_duration = false;
  v.dry_run = false;
  v.clock = clock_.fn();
  auto r = t->Vacuum(v);
  ASSERT_FALSE(r.ok()) << r->files.size() << " files deleted";
  ExpectRefusedNamingTheCommit(r.status());
  EXPECT_TRUE(fs_->Exists(outside_ + "/notes.txt"));
}

// No version references the link any more: vacuum runs, and never deletes through it.
TEST_F(TableSymlinkTest, VacuumNeverEntersADirectoryLinkedFromOutside) {
  auto t = Table::Open(fs_, root_);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->Restore(0, Options()).ok());
  VacuumOptions v;
  v.retention_hours = 0;
  v.enforce_retention_duration = false;
  v.dry_run = false;
  v.clock = [this] { return clock_.fn()() + 1000; };  // the removes are past the retention
  auto r = t->Vacuum(v);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const std::string& f : r->files) EXPECT_NE(f.rfind("link/", 0), 0u) << f;
  EXPECT_TRUE(fs_->Exists(outside_ + "/notes.txt"));
  EXPECT_EQ(ReadAll(*Table::Open(fs_, root_)).size(), 3u);
}

}  // namespace
}  // namespace sluice::table

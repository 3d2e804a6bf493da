// Table operations in a memory file system: time travel, history, delete by predicate,
// restore, optimize and vacuum (with a clock the tests move).
#include <gtest/gtest.h>

#include <algorithm>

#include "sluice/table/table.h"
#include "table/log_path.h"
#include "table_test_util.h"

namespace sluice::table {
namespace {

using testing::ManualClock;
using testing::Paths;
using testing::ReadAll;
using testing::Record;
using testing::WriteShard;

constexpr const char* kRoot = "/t";
constexpr int64_t kHourMs = 3600 * 1000;

class TableOpsTest : public ::testing::Test {
 protected:
  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  io::FileSystem* fs() { return fs_.get(); }
  ManualClock clock_;

  CommitOptions Options() {
    CommitOptions o;
    o.clock = clock_.fn();
    o.create.partition_columns = {"source"};
    return o;
  }
  DataFile Shard(int first, int n, const std::string& source = "a") {
    return WriteShard(fs(), kRoot, first, n, {{"source", source}});
  }
  int64_t Append(int first, int n, const std::string& source = "a") {
    auto r = Table::Append(fs(), kRoot, {Shard(first, n, source)}, Options());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r->version;
  }
  Table Open(const OpenOptions& o = {}) {
    auto t = Table::Open(fs(), kRoot, o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return *t;
  }
  VacuumOptions Vacuum(double hours, bool dry_run) {
    VacuumOptions v;
    v.retention_hours = hours;
    v.dry_run = dry_run;
    v.enforce_retention_duration = false;
    v.clock = clock_.fn();
    return v;
  }
};

TEST_F(TableOpsTest, TimeTravelByVersionSeesExactlyThatVersionsFiles) {
  Append(0, 3);
  Append(3, 3);
  Append(6, 3);
  EXPECT_EQ(ReadAll(Open(testing::AtVersion(0))).size(), 3u);
  EXPECT_EQ(ReadAll(Open(testing::AtVersion(1))).size(), 6u);
  EXPECT_EQ(Open(testing::AtVersion(2)).num_records(), 9);
  auto future = Table::Open(fs(), kRoot, testing::AtVersion(3));
  EXPECT_EQ(future.status().code(), StatusCode::kNotFound);
  EXPECT_NE(future.status().message().find("latest is 2"), std::string::npos);
}

TEST_F(TableOpsTest, TimeTravelByTimestampTakesTheLatestCommitAtOrBefore) {
  const int64_t t0 = clock_.now->load();
  Append(0, 1);  // version 0 at t0
  clock_.Advance(1000);
  Append(1, 1);  // version 1 at t0 + 1000
  clock_.Advance(1000);
  Append(2, 1);  // version 2 at t0 + 2000
  EXPECT_EQ(Open(testing::AtTime(t0)).version(), 0);
  EXPECT_EQ(Open(testing::AtTime(t0 + 999)).version(), 0);
  EXPECT_EQ(Open(testing::AtTime(t0 + 1000)).version(), 1);
  EXPECT_EQ(Open(testing::AtTime(t0 + 10'000'000)).version(), 2);
  auto before = Table::Open(fs(), kRoot, testing::AtTime(t0 - 1));
  EXPECT_EQ(before.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(before.status().message().find("before the first commit"), std::string::npos);
  EXPECT_NE(before.status().message().find(FormatTimestamp(t0)), std::string::npos);
}

TEST_F(TableOpsTest, CommitTimestampsNeverGoBackwards) {
  Append(0, 1);
  clock_.Advance(-60'000);  // the clock jumped back a minute
  Append(1, 1);
  auto history = *Open().History();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_GT(history[0].timestamp_ms, history[1].timestamp_ms);
}

TEST_F(TableOpsTest, HistoryIsNewestFirstWithSparkOperationNames) {
  Append(0, 1);
  Append(1, 1, "b");
  Table t = Open();
  ASSERT_TRUE(t.Delete(*FilePredicate::Parse("source = 'b'")).ok());
  auto history = *t.History();
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0].version, 2);
  EXPECT_EQ(history[0].operation, "DELETE");
  EXPECT_EQ(history[0].operation_parameters.at("predicate"), "[\"source = 'b'\"]");
  EXPECT_EQ(history[1].operation, "WRITE");
  EXPECT_EQ(history[1].operation_parameters.at("mode"), "Append");
  EXPECT_EQ(Open(testing::AtVersion(1)).History()->size(), 2u);
  EXPECT_EQ(t.History(1)->size(), 1u);
}

TEST_F(TableOpsTest, DeleteByPartitionValueRemovesOnlyThoseFiles) {
  Append(0, 4, "web");
  Append(4, 4, "books");
  Table t = Open();
  auto r = t.Delete(*FilePredicate::Parse("source = 'web'"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(t.version(), 2);
  ASSERT_EQ(t.files().size(), 1u);
  EXPECT_EQ(t.files()[0].partition_values.at("source"), "books");
  // Nothing matches: no commit.
  EXPECT_EQ(t.Delete(*FilePredicate::Parse("source = 'web'"))->attempts, 0);
  EXPECT_EQ(t.version(), 2);
  auto bad = t.Delete(*FilePredicate::Parse("lang = 'en'"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TableOpsTest, RestoreBringsBackAVersionsFilesExactly) {
  Append(0, 3, "a");
  Append(3, 3, "b");
  Table t = Open();
  std::vector<std::string> v1 = Paths(t);
  ASSERT_TRUE(t.Delete(*FilePredicate::Parse("source = 'a'")).ok());
  ASSERT_TRUE(t.AppendFiles({Shard(6, 3, "c")}, Options()).ok());
  auto r = t.Restore(1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 4);
  EXPECT_EQ(Paths(t), v1);
  EXPECT_EQ(ReadAll(t), ReadAll(Open(testing::AtVersion(1))));
  EXPECT_EQ(t.History(1)->at(0).operation, "RESTORE");
}

TEST_F(TableOpsTest, RestoreToAVersionWhoseFilesWereVacuumedFailsNamingOne) {
  Append(0, 3, "a");
  Table t = Open();
  std::string gone = t.files()[0].path;
  ASSERT_TRUE(t.Delete(FilePredicate{}).ok());
  clock_.Advance(2 * kHourMs);
  ASSERT_TRUE(t.Vacuum(Vacuum(1, /*dry_run=*/false)).ok());
  auto r = t.Restore(0);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find(gone), std::string::npos) << r.status().ToString();
}

TEST_F(TableOpsTest, OptimizeCompactsSmallShardsKeepingRecordsAndOrder) {
  for (int i = 0; i < 5; ++i) Append(10 * i, 10, "a");
  Append(100, 10, "b");  // alone in its partition: left as it is
  Table t = Open();
  std::vector<std::string> before = ReadAll(t);
  OptimizeOptions o;
  o.commit = Options();
  auto r = t.Optimize(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->removed.size(), 5u);
  EXPECT_EQ(r->added.size(), 1u);
  EXPECT_EQ(r->records, 50);
  EXPECT_EQ(t.files().size(), 2u);
  std::vector<std::string> after = ReadAll(t);
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(after, before);
  auto history = *t.History(1);
  EXPECT_EQ(history[0].operation, "OPTIMIZE");
  std::string commit =
      *fs()->ReadAll(std::string(kRoot) + "/_delta_log/" + CommitFileName(t.version()));
  EXPECT_EQ(commit.find("\"dataChange\":true"), std::string::npos);  // a rearrangement only
  // Nothing left to compact: no commit.
  EXPECT_EQ(t.Optimize(o)->commit.version, -1);
  // The compacted shard holds partition a's records in the order of the old shards' paths.
  for (const DataFile& f : t.files())
    EXPECT_EQ(f.records, f.partition_values.at("source") == "a" ? 50 : 10);
}

TEST_F(TableOpsTest, VacuumRefusesShortRetentionUnlessTold) {
  Append(0, 1);
  Table t = Open();
  VacuumOptions v;
  v.retention_hours = 1;
  auto r = t.Vacuum(v);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("enforce_retention_duration"), std::string::npos);
  v.retention_hours = 200;
  EXPECT_TRUE(t.Vacuum(v).ok());
}

TEST_F(TableOpsTest, VacuumNeverDeletesAFileOfAVersionInsideTheRetention) {
  Append(0, 3, "a");
  Append(3, 3, "b");
  Table t = Open();
  std::string removed_a = t.files()[0].path;
  clock_.Advance(10 * kHourMs);
  ASSERT_TRUE(t.Delete(*FilePredicate::Parse("source = 'a'"), Options()).ok());  // version 2
  // Version 1 (which holds removed_a) was current until 10 h ago + now: with a retention of
  // 5 h, a reader may still time-travel to it: nothing may go.
  clock_.Advance(4 * kHourMs);
  auto dry = t.Vacuum(Vacuum(5, true));
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_TRUE(dry->files.empty());
  // 6 h after the delete the removal left the retention: the file and its index go.
  clock_.Advance(2 * kHourMs);
  auto plan = t.Vacuum(Vacuum(5, true));
  ASSERT_EQ(plan->files.size(), 2u);
  auto relative = *DecodeLogPath(removed_a);
  EXPECT_EQ(plan->files[0], relative);
  EXPECT_EQ(plan->files[1], relative + ".idx");
  EXPECT_TRUE(fs()->Exists(std::string(kRoot) + "/" + relative));  // dry run
  ASSERT_TRUE(t.Vacuum(Vacuum(5, false)).ok());
  EXPECT_FALSE(fs()->Exists(std::string(kRoot) + "/" + relative));
  EXPECT_EQ(ReadAll(Open()).size(), 3u);  // the live version is whole
  EXPECT_EQ(t.Vacuum(Vacuum(5, false))->files.size(), 0u);
}

TEST_F(TableOpsTest, VacuumReclaimsLeftoversOfCrashedWritersOnlyOnceOld) {
  Append(0, 1);
  // A writer that crashed: a shard never committed, a RecordWriter temp, a log put temp.
  Shard(50, 2);
  ASSERT_TRUE(fs()->WriteAll(std::string(kRoot) + "/part-x.tfrecord.zst.tmp-99-0", "x").ok());
  ASSERT_TRUE(
      fs()->WriteAll(std::string(kRoot) + "/_delta_log/00000000000000000001.json.put.tmp-99-1", "x")
          .ok());
  ASSERT_TRUE(fs()->WriteAll(std::string(kRoot) + "/_hidden/keep", "x").ok());
  Table t = Open();
  EXPECT_TRUE(t.Vacuum(Vacuum(1, false))->files.empty());  // all younger than 1 h
  clock_.Advance(2 * kHourMs);
  auto r = t.Vacuum(Vacuum(1, false));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->files.size(), 4u);  // shard + index + two temps
  EXPECT_TRUE(fs()->Exists(std::string(kRoot) + "/_hidden/keep"));
  EXPECT_EQ(ReadAll(Open()), std::vector<std::string>{Record(0)});
}

}  // namespace
}  // namespace sluice::table

// Loaders pinned to a table version: Dataset::Read of a table directory, "DIR@vN" and
// ReadOptions::table_version; a version's order does not change when later versions are
// committed; an iterator state restores onto the same version only.
#include <gtest/gtest.h>

#include "pipeline_test_util.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/table/table.h"
#include "sluice/table/table_writer.h"

namespace sluice::table {
namespace {

using pipeline::Dataset;
using pipeline::ReadOptions;
using pipeline::testing::Drain;

constexpr const char* kRoot = "/t";

class TableLoaderTest : public ::testing::Test {
 protected:
  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();

  // Appends one shard holding the decimal ids first..first+n-1; returns the version.
  int64_t Append(int first, int n) {
    auto w = TableWriter::Open(fs_.get(), kRoot);
    EXPECT_TRUE(w.ok());
    for (int i = first; i < first + n; ++i) EXPECT_TRUE((*w)->Write(std::to_string(i)).ok());
    auto r = Table::Append(fs_.get(), kRoot, *(*w)->Finish());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r->version;
  }
  Dataset Read(const std::string& path, std::optional<int64_t> version = std::nullopt) {
    ReadOptions o;
    o.paths = {path};
    o.fs = fs_.get();
    o.table_version = version;
    auto d = Dataset::Read(o);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d->Shuffle({.seed = 3}).Batch(4);
  }
  std::vector<int64_t> Epoch(const Dataset& d, size_t batches = SIZE_MAX) {
    auto it = d.MakeIterator();
    EXPECT_TRUE(it.ok()) << it.status().ToString();
    return Drain(it->get(), batches);
  }
};

TEST_F(TableLoaderTest, TableDirectoryReadsItsLatestVersionFixedForTheDatasetsLife) {
  Append(0, 10);
  Append(10, 10);
  Dataset d = Read(kRoot);
  Append(20, 10);  // after the Dataset was made: not part of it
  std::vector<int64_t> ids = Epoch(d);
  EXPECT_EQ(ids.size(), 20u);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids.back(), 19);
  EXPECT_EQ(Epoch(Read(kRoot)).size(), 30u);
}

TEST_F(TableLoaderTest, VersionsReadTheirOwnFilesByPathSuffixOrOption) {
  Append(0, 10);
  Append(10, 5);
  EXPECT_EQ(Epoch(Read(std::string(kRoot) + "@v0")).size(), 10u);
  EXPECT_EQ(Epoch(Read(kRoot, 0)).size(), 10u);
  EXPECT_EQ(Epoch(Read(std::string(kRoot) + "@v1")).size(), 15u);
  ReadOptions o;
  o.paths = {std::string(kRoot) + "@v1"};
  o.fs = fs_.get();
  o.table_version = 0;
  EXPECT_EQ(Dataset::Read(o).status().code(), StatusCode::kInvalidArgument);
  o.paths = {std::string(kRoot) + "@v7"};
  o.table_version.reset();
  EXPECT_EQ(Dataset::Read(o).status().code(), StatusCode::kNotFound);
}

TEST_F(TableLoaderTest, AppendingAVersionDoesNotChangeTheOrderOfAnEarlierOne) {
  Append(0, 20);
  Append(20, 20);
  std::vector<int64_t> before = Epoch(Read(kRoot, 1));
  Append(40, 20);
  Append(60, 20);
  EXPECT_EQ(Epoch(Read(kRoot, 1)), before);
}

TEST_F(TableLoaderTest, PinnedIteratorRestoredAfterLaterCommitsContinuesExactly) {
  Append(0, 20);
  Append(20, 20);
  Dataset d = Read(kRoot);  // version 1
  std::vector<int64_t> full = Epoch(d);
  auto it = d.MakeIterator().value();
  std::vector<int64_t> head = Drain(it.get(), 3);
  std::string state = *it->Save();
  Append(40, 20);  // version 2, 3 commit while the job is down
  Append(60, 20);
  auto resumed = Read(std::string(kRoot) + "@v1").MakeIterator().value();
  ASSERT_TRUE(resumed->Restore(state).ok());
  std::vector<int64_t> tail = Drain(resumed.get());
  head.insert(head.end(), tail.begin(), tail.end());
  EXPECT_EQ(head, full);
  // The same state on the latest version is refused.
  auto latest = Read(kRoot).MakeIterator().value();
  Status s = latest->Restore(state);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
}

TEST_F(TableLoaderTest, StateOfOneVersionRestoredOnAnotherIsRefusedNamingBothVersions) {
  Append(0, 20);
  Append(20, 20);  // version 1
  auto it = Read(kRoot).MakeIterator().value();
  Drain(it.get(), 2);
  std::string state = *it->Save();
  Append(40, 20);  // version 2
  Status s = Read(kRoot).MakeIterator().value()->Restore(state);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("version 1 of table /t"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("version 2 of table /t"), std::string::npos) << s.ToString();
  // Version 3 holds exactly version 1's files: same content, another version, still refused.
  ASSERT_TRUE(Table::Open(fs_.get(), kRoot)->Restore(1).ok());
  auto v3 = Read(kRoot).MakeIterator().value();
  s = v3->Restore(state);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("version 1 of table"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("version 3 of table"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Read(std::string(kRoot) + "@v1").MakeIterator().value()->Restore(state).ok());
}

TEST_F(TableLoaderTest, ReadAtATimestampReadsTheVersionCurrentThen) {
  Append(0, 10);
  Append(10, 5);
  Append(15, 5);
  Table t = *Table::Open(fs_.get(), kRoot);
  auto history = *t.History();  // newest first
  ASSERT_EQ(history.size(), 3u);
  ReadOptions o;
  o.paths = {kRoot};
  o.fs = fs_.get();
  o.table_timestamp_ms = history[1].timestamp_ms;  // version 1's time: 15 records
  auto d = Dataset::Read(o);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(Epoch(*d).size(), 15u);
  o.table_timestamp_ms = history[0].timestamp_ms + 60'000;  // after the last: the latest
  EXPECT_EQ(Epoch(*Dataset::Read(o)).size(), 20u);
  o.table_timestamp_ms = history[2].timestamp_ms - 1;  // before the first commit
  d = Dataset::Read(o);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status().ToString();
}

TEST_F(TableLoaderTest, TableOfParquetFilesIsRefusedAtOpenNamingTheProvider) {
  // A Spark / delta-rs table: its data files are Parquet, not sluice shards.
  const std::string commit =
      R"({"protocol":{"minReaderVersion":1,"minWriterVersion":2}})"
      "\n"
      R"({"metaData":{"id":"a","format":{"provider":"parquet","options":{}},)"
      R"("schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],)"
      R"("configuration":{},"createdTime":1700000000000}})"
      "\n"
      R"({"add":{"path":"part-0.parquet","partitionValues":{},"size":9,)"
      R"("modificationTime":1700000000000,"dataChange":true}})"
      "\n";
  ASSERT_TRUE(fs_->CreateDirs("/p/_delta_log").ok());
  ASSERT_TRUE(fs_->WriteAll("/p/_delta_log/00000000000000000000.json", commit).ok());
  ASSERT_TRUE(fs_->WriteAll("/p/part-0.parquet", "PAR1 PAR1").ok());
  for (auto policy : {pipeline::ErrorPolicy::kRaise, pipeline::ErrorPolicy::kSkip}) {
    ReadOptions o;
    o.paths = {"/p"};
    o.fs = fs_.get();
    o.on_error = policy;
    auto d = Dataset::Read(o);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented) << d.status().ToString();
    EXPECT_NE(d.status().message().find("table /p version 0: its data files are parquet"),
              std::string::npos)
        << d.status().ToString();
  }
}

TEST_F(TableLoaderTest, ShardThatDisagreesWithTheLogsRecordCountIsDataLoss) {
  Append(0, 10);
  Table t = *Table::Open(fs_.get(), kRoot);
  std::string path = *t.FilePath(t.files()[0]);
  // Another shard of 9 records under the committed name.
  auto w = format::RecordWriter::Open(fs_.get(), path);
  for (int i = 0; i < 9; ++i) ASSERT_TRUE((*w)->Write("x").ok());
  ASSERT_TRUE((*w)->Close().ok());
  ReadOptions o;
  o.paths = {kRoot};
  o.fs = fs_.get();
  auto d = Dataset::Read(o);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(d.status().message().find("the log says 10"), std::string::npos)
      << d.status().ToString();
}

}  // namespace
}  // namespace sluice::table

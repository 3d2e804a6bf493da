// Commits in a memory file system: versions, concurrency and conflicts (other writers made to
// win the race through a LogStore hook), idempotent txn retries, storage errors, checkpoints.
#include <gtest/gtest.h>

#include "sluice/table/table.h"
#include "table/log_path.h"
#include "table/table_internal.h"
#include "table_test_util.h"

namespace sluice::table {
namespace {

using testing::Paths;
using testing::RacingStore;
using testing::ReadAll;
using testing::WriteShard;

constexpr const char* kRoot = "/t";

class TableCommitTest : public ::testing::Test {
 protected:
  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  io::FileSystem* fs() { return fs_.get(); }

  DataFile Shard(int first, int n, const PartitionValues& p = {}) {
    return WriteShard(fs(), kRoot, first, n, p);
  }
  CommitOptions Partitioned() {
    CommitOptions o;
    o.create.partition_columns = {"source"};
    return o;
  }
  Table Open(std::shared_ptr<LogStore> store = nullptr) {
    OpenOptions o;
    o.log_store = std::move(store);
    auto t = Table::Open(fs(), kRoot, o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return *t;
  }
  std::string LogFile(int64_t version) {
    return *fs()->ReadAll(std::string(kRoot) + "/_delta_log/" + CommitFileName(version));
  }
};

TEST_F(TableCommitTest, CreateWritesLowestProtocolAndVersionsAreConsecutive) {
  auto created = Table::Create(fs(), kRoot);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->version(), 0);
  EXPECT_EQ(created->protocol(), Protocol{});  // reader 1, writer 2
  EXPECT_EQ(created->metadata().format_provider, "tfrecord");
  for (int i = 0; i < 3; ++i) {
    auto r = Table::Append(fs(), kRoot, {Shard(10 * i, 10)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->version, i + 1);
    EXPECT_EQ(r->attempts, 1);
  }
  Table t = Open();
  EXPECT_EQ(t.version(), 3);
  EXPECT_EQ(t.files().size(), 3u);
  EXPECT_EQ(t.num_records(), 30);
  EXPECT_NE(LogFile(2).find("\"isBlindAppend\":true"), std::string::npos);
  EXPECT_NE(LogFile(2).find(R"(numRecords\":10)"), std::string::npos);
  EXPECT_EQ(Table::Create(fs(), kRoot).status().code(), StatusCode::kAlreadyExists);
}

TEST_F(TableCommitTest, FirstAppendCreatesTheTableWithItsFiles) {
  CommitOptions o = Partitioned();
  o.create.features["text"] = {format::FeatureType::kBytes, 1};
  auto r = Table::Append(fs(), kRoot, {Shard(0, 5, {{"source", "web"}})}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 0);
  Table t = Open();
  EXPECT_EQ(t.metadata().partition_columns, std::vector<std::string>{"source"});
  EXPECT_EQ(t.features().at("text").type, format::FeatureType::kBytes);
  EXPECT_NE(t.metadata().schema_string.find("\"binary\""), std::string::npos);
  EXPECT_EQ(t.files()[0].partition_values.at("source"), "web");
  EXPECT_EQ(t.files()[0].path.rfind("source=web/part-", 0), 0u);
}

TEST_F(TableCommitTest, FileWithoutThePartitionColumnsIsRefused) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 1, {{"source", "a"}})}, Partitioned()).ok());
  auto r = Table::Append(fs(), kRoot, {Shard(1, 1)});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("partitioned by"), std::string::npos);
}

TEST_F(TableCommitTest, ConcurrentBlindAppendsNeverConflict) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 5)}).ok());
  DataFile mine = Shard(5, 5), theirs = Shard(10, 5);
  auto store = std::make_shared<RacingStore>(fs(), [&] {
    ASSERT_TRUE(Table::Append(fs(), kRoot, {theirs}).ok());  // wins version 1
  });
  Table t = Open(store);
  auto r = t.AppendFiles({mine});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 2);
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(t.version(), 2);
  EXPECT_EQ(t.files().size(), 3u);
}

TEST_F(TableCommitTest, OverwriteRacingAnAppendConflictsAndCommitsNothing) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 5)}).ok());
  DataFile replacement = Shard(100, 5), appended = Shard(5, 5);
  auto store = std::make_shared<RacingStore>(
      fs(), [&] { ASSERT_TRUE(Table::Append(fs(), kRoot, {appended}).ok()); });
  Table t = Open(store);
  auto r = t.Overwrite({replacement});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("concurrent append"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find(appended.path), std::string::npos);
  Table latest = Open();
  EXPECT_EQ(latest.version(), 1);
  EXPECT_EQ(latest.num_records(), 10);  // the append stands, the overwrite left no trace
}

TEST_F(TableCommitTest, OverwriteOfOnePartitionIgnoresAppendsToAnother) {
  ASSERT_TRUE(Table::Append(fs(), kRoot,
                            {Shard(0, 5, {{"source", "a"}}), Shard(5, 5, {{"source", "b"}})},
                            Partitioned())
                  .ok());
  DataFile new_a = Shard(100, 2, {{"source", "a"}}), more_b = Shard(200, 3, {{"source", "b"}});
  auto store = std::make_shared<RacingStore>(
      fs(), [&] { ASSERT_TRUE(Table::Append(fs(), kRoot, {more_b}).ok()); });
  Table t = Open(store);
  auto r = t.Overwrite({new_a}, *FilePredicate::Parse("source = 'a'"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 2);
  EXPECT_EQ(t.num_records(), 2 + 5 + 3);
}

TEST_F(TableCommitTest, DeleteRacingADeleteOfTheSameFilesConflicts) {
  ASSERT_TRUE(Table::Append(fs(), kRoot,
                            {Shard(0, 5, {{"source", "a"}}), Shard(5, 5, {{"source", "b"}})},
                            Partitioned())
                  .ok());
  auto where = *FilePredicate::Parse("source = 'a'");
  auto store = std::make_shared<RacingStore>(fs(), [&] {
    Table other = *Table::Open(fs(), kRoot);
    ASSERT_TRUE(other.Delete(where).ok());
  });
  Table t = Open(store);
  auto r = t.Delete(where);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("concurrent delete-delete"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(Open().version(), 1);
}

TEST_F(TableCommitTest, DeleteRacingAnAppendToItsPartitionConflicts) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 5, {{"source", "a"}})}, Partitioned()).ok());
  DataFile more_a = Shard(5, 5, {{"source", "a"}});
  auto store = std::make_shared<RacingStore>(
      fs(), [&] { ASSERT_TRUE(Table::Append(fs(), kRoot, {more_a}).ok()); });
  Table t = Open(store);
  auto r = t.Delete(*FilePredicate::Parse("source = 'a'"));
  EXPECT_NE(r.status().message().find("concurrent append"), std::string::npos)
      << r.status().ToString();
}

TEST_F(TableCommitTest, MetadataChangeByAWinnerConflicts) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 5)}).ok());
  DataFile mine = Shard(5, 5);
  auto store = std::make_shared<RacingStore>(fs(), [&] {
    Table other = *Table::Open(fs(), kRoot);
    ASSERT_TRUE(other.Checkpoint().ok());  // commits a protocol upgrade: not a conflict
  });
  Table t = Open(store);
  ASSERT_TRUE(t.AppendFiles({mine}).ok());
  // A winner that rewrites metaData does conflict.
  Metadata changed = t.metadata();
  changed.description = "changed";
  std::string path = std::string(kRoot) + "/_delta_log/" + CommitFileName(t.version() + 1);
  auto racing = std::make_shared<RacingStore>(
      fs(), [&] { ASSERT_TRUE(fs()->PutIfAbsent(path, SerializeActions({changed})).ok()); });
  Table t2 = Open(racing);
  auto r = t2.AppendFiles({Shard(10, 1)});
  EXPECT_NE(r.status().message().find("metadata changed"), std::string::npos)
      << r.status().ToString();
}

TEST_F(TableCommitTest, TxnMakesJobRetriesIdempotent) {
  CommitOptions o;
  o.txn = TxnId{"job-42", 1};
  auto first = Table::Append(fs(), kRoot, {Shard(0, 5)}, o);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->duplicate);
  auto retry = Table::Append(fs(), kRoot, {Shard(5, 5)}, o);  // the job ran again
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->duplicate);
  EXPECT_EQ(retry->version, 0);
  o.txn->version = 2;
  EXPECT_FALSE(Table::Append(fs(), kRoot, {Shard(10, 5)}, o)->duplicate);
  Table t = Open();
  EXPECT_EQ(t.version(), 1);
  EXPECT_EQ(t.num_records(), 10);
  EXPECT_EQ(t.txn_version("job-42"), 2);
}

TEST_F(TableCommitTest, TxnCommittedByARacingRunIsADuplicateNotAConflict) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 5)}).ok());
  CommitOptions o;
  o.txn = TxnId{"job", 7};
  DataFile a = Shard(5, 5), b = Shard(10, 5);
  auto store = std::make_shared<RacingStore>(
      fs(), [&] { ASSERT_TRUE(Table::Append(fs(), kRoot, {a}, o).ok()); });
  Table t = Open(store);
  auto r = t.AppendFiles({b}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->duplicate);
  EXPECT_EQ(Open().num_records(), 10);
}

TEST_F(TableCommitTest, PutThatFailsAfterLandingIsRecognisedAsCommitted) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 5)}).ok());
  auto store = std::make_shared<RacingStore>(fs(), nullptr);
  store->fail_puts = 1;
  store->land_failed_puts = true;  // the store kept the bytes, then the connection dropped
  Table t = Open(store);
  auto r = t.AppendFiles({Shard(5, 5)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 1);
  Table latest = Open();
  EXPECT_EQ(latest.version(), 1);  // committed once, not twice
  EXPECT_EQ(latest.num_records(), 10);
}

TEST_F(TableCommitTest, PutThatFailsIsRetriedAndGivesUpWithTheError) {
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 5)}).ok());
  auto store = std::make_shared<RacingStore>(fs(), nullptr);
  store->fail_puts = 2;
  Table t = Open(store);
  auto r = t.AppendFiles({Shard(5, 5)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->attempts, 3);
  store->fail_puts = 100;
  CommitOptions o;
  o.max_storage_retries = 1;
  auto failed = t.AppendFiles({Shard(10, 5)}, o);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError);
  EXPECT_NE(failed.status().message().find("connection reset"), std::string::npos);
  EXPECT_EQ(Open().version(), 1);
}

TEST_F(TableCommitTest, HeldTableCommitsReadingOnlyTheCommitsAfterItsVersion) {
  CommitOptions o;
  o.checkpoint_interval = 0;  // without a checkpoint a fresh load lists and replays all
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(i, 1)}, o).ok());
  auto store = std::make_shared<RacingStore>(fs(), nullptr);
  Table t = Open(store);
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(20, 1)}, o).ok());  // another writer: v20
  store->lists = store->reads = 0;
  auto r = t.AppendFiles({Shard(21, 1)}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 21);
  EXPECT_EQ(store->lists, 0);
  EXPECT_LE(store->reads, 4);  // v20, then the versions after the commit; never v0..v19
  EXPECT_EQ(t.num_records(), 22);
  EXPECT_EQ(Open().num_records(), 22);
}

TEST_F(TableCommitTest, CheckpointsUpgradeTheProtocolAndOpenWithoutListing) {
  CommitOptions o;
  o.checkpoint_interval = 5;
  for (int i = 0; i < 12; ++i) {
    auto r = Table::Append(fs(), kRoot, {Shard(i, 1)}, o);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->checkpoint_error.empty()) << r->checkpoint_error;
    EXPECT_EQ(r->checkpoint_version.has_value(), i == 5 || i == 10) << i;
  }
  Table v4 = *Table::Open(fs(), kRoot, testing::AtVersion(4));
  EXPECT_EQ(v4.protocol(), Protocol{});  // reader 1 / writer 2 until the first checkpoint
  auto store = std::make_shared<RacingStore>(fs(), nullptr);
  Table t = Open(store);
  EXPECT_EQ(t.version(), 11);
  EXPECT_EQ(t.num_records(), 12);
  EXPECT_EQ(t.protocol().min_reader_version, 3);
  EXPECT_TRUE(t.protocol().HasReaderFeature("v2Checkpoint"));
  EXPECT_EQ(store->lists, 0);          // _last_checkpoint named the checkpoint
  EXPECT_EQ(store->reads, 1 + 1 + 2);  // hint, checkpoint 10, commit 11, absent commit 12
  auto hint = fs()->ReadAll(std::string(kRoot) + "/_delta_log/_last_checkpoint");
  ASSERT_TRUE(hint.ok());
  EXPECT_NE(hint->find("\"version\":10"), std::string::npos);
  // Time travel below the checkpoint replays commits.
  EXPECT_EQ(Table::Open(fs(), kRoot, testing::AtVersion(7))->num_records(), 8);
}

TEST_F(TableCommitTest, TablePropertyCheckpointIntervalZeroNeverCheckpoints) {
  CommitOptions o;  // checkpoint_interval: the default 100
  o.create.configuration["delta.checkpointInterval"] = "0";
  Table t = *Table::Create(fs(), kRoot, o);
  for (int i = 0; i < 105; ++i) {
    auto r = t.AppendFiles({Shard(i, 1)}, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(r->checkpoint_version.has_value()) << r->version;
  }
  EXPECT_EQ(t.version(), 105);
  EXPECT_EQ(Open().protocol(), Protocol{});  // reader 1 / writer 2
  EXPECT_FALSE(fs()->Exists(std::string(kRoot) + "/_delta_log/_last_checkpoint"));
  auto entries = fs()->List(std::string(kRoot) + "/_delta_log");
  ASSERT_TRUE(entries.ok());
  for (const io::FileInfo& f : *entries) {
    EXPECT_FALSE(ParseLogPath(io::Basename(f.path)).is_checkpoint()) << f.path;
  }
}

TEST_F(TableCommitTest, TablePropertyCheckpointIntervalWinsOverTheDefault) {
  CommitOptions o;  // checkpoint_interval: the default 100
  o.create.configuration["delta.checkpointInterval"] = "3";
  for (int i = 0; i < 7; ++i) {
    auto r = Table::Append(fs(), kRoot, {Shard(i, 1)}, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->checkpoint_version.has_value(), i == 3 || i == 6) << i;
  }
  EXPECT_TRUE(Open().protocol().HasReaderFeature("v2Checkpoint"));
}

TEST_F(TableCommitTest, MalformedCheckpointIntervalIsRefusedAtCreate) {
  CommitOptions o;
  o.create.configuration["delta.checkpointInterval"] = "-5";
  auto r = Table::Append(fs(), kRoot, {Shard(0, 1)}, o);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("delta.checkpointInterval"), std::string::npos);
  EXPECT_NE(r.status().message().find("'-5'"), std::string::npos);
  EXPECT_FALSE(Table::IsTable(fs(), kRoot));
}

TEST_F(TableCommitTest, DamagedCheckpointFallsBackToReplayingCommits) {
  CommitOptions o;
  o.checkpoint_interval = 3;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(i, 1)}, o).ok());
  std::string log = std::string(kRoot) + "/_delta_log";
  auto entries = fs()->List(log);
  ASSERT_TRUE(entries.ok());
  for (const io::FileInfo& f : *entries) {
    if (ParseLogPath(io::Basename(f.path)).is_checkpoint()) {
      ASSERT_TRUE(fs()->WriteAll(f.path, "{\"checkpointMetadata\":{\"vers").ok());
    }
  }
  Table t = Open();
  EXPECT_EQ(t.version(), 4);
  EXPECT_EQ(t.num_records(), 5);
  ASSERT_TRUE(fs()->WriteAll(log + "/_last_checkpoint", "garbage").ok());
  EXPECT_EQ(Open().num_records(), 5);
}

TEST_F(TableCommitTest, UnsupportedWriterVersionIsRefusedForWritesOnly) {
  std::string log = std::string(kRoot) + "/_delta_log";
  Protocol p;
  p.min_writer_version = 4;
  Metadata m;
  m.id = "x";
  ASSERT_TRUE(fs()->CreateDirs(log).ok());
  ASSERT_TRUE(fs()->PutIfAbsent(log + "/" + CommitFileName(0), SerializeActions({p, m})).ok());
  EXPECT_TRUE(Table::Open(fs(), kRoot).ok());
  auto r = Table::Append(fs(), kRoot, {Shard(0, 1)});
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("writer version 4"), std::string::npos);
}

TEST_F(TableCommitTest, AppendOnlyTableRefusesDeletes) {
  CommitOptions o = Partitioned();
  o.create.configuration["delta.appendOnly"] = "true";
  ASSERT_TRUE(Table::Append(fs(), kRoot, {Shard(0, 1, {{"source", "a"}})}, o).ok());
  Table t = Open();
  auto r = t.Delete(FilePredicate{});
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("append-only"), std::string::npos);
}

TEST_F(TableCommitTest, CreatorThatLosesTheRaceAppendsToTheWinnersTable) {
  DataFile mine = Shard(0, 5), theirs = Shard(5, 5);
  // The other writer creates the table (version 0) between our plan and our put.
  RacingStore store(fs(), [&] { ASSERT_TRUE(Table::Append(fs(), kRoot, {theirs}).ok()); });
  TableState state;
  CommitOptions o;
  auto r = CommitToTable(&store, kRoot, o, AppendPlan({mine}, o, kRoot), true, &state);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 1);
  Table t = Open();
  EXPECT_EQ(t.num_records(), 10);
  // Version 1 holds no second protocol or metaData.
  EXPECT_EQ(LogFile(1).find("metaData"), std::string::npos);
}

}  // namespace
}  // namespace sluice::table

#include "sluice/format/shard_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "publish_test_util.h"
#include "sluice/format/record_reader.h"
#include "sluice/format/shard_index.h"
#include "sluice/io/fault_injection_file_system.h"

namespace sluice::format {
namespace {

// Record i: `size` bytes, deterministic, mildly compressible.
std::string MakeRecord(uint64_t i, size_t size) {
  std::mt19937 rng(static_cast<uint32_t>(i));
  std::string r(size, '\0');
  for (auto& c : r) c = static_cast<char>('a' + rng() % 8);
  return r;
}

// Names in `dir`, without the writer lock's entry (a lock test's business).
std::vector<std::string> FileNames(io::FileSystem* fs, const std::string& dir) {
  std::vector<std::string> names;
  for (const std::string& n : testing::FileNames(fs, dir)) {
    if (!WriterLock::IsEntryName(n)) names.push_back(n);
  }
  return names;
}

std::vector<std::string> ReadAllRecords(io::FileSystem* fs, const std::string& dir) {
  std::vector<std::string> out;
  auto shards = ResolveShards(fs, dir);
  EXPECT_TRUE(shards.ok()) << shards.status().ToString();
  if (!shards.ok()) return out;
  for (const auto& shard : *shards) {
    auto reader = RecordReader::Open(fs, shard);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    ByteView record;
    while (true) {
      auto more = (*reader)->Next(&record);
      EXPECT_TRUE(more.ok()) << more.status().ToString();
      if (!more.ok() || !*more) break;
      out.emplace_back(record);
    }
  }
  return out;
}

class ShardWriterTest : public ::testing::Test {
 protected:
  std::unique_ptr<ShardWriter> Open(Codec codec, uint64_t target, io::FileSystem* fs = nullptr) {
    ShardWriterOptions options;
    options.record.codec = codec;
    options.record.zstd_frame_bytes = 16 << 10;
    options.target_shard_bytes = target;
    auto w = ShardWriter::Open(fs ? fs : fs_.get(), "/out", options);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(*w) : nullptr;
  }
  void WriteRecords(ShardWriter* w, uint64_t n, size_t size) {
    for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(w->Write(MakeRecord(i, size)).ok());
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
};

TEST_F(ShardWriterTest, RollsAtTargetSizeUncompressed) {
  auto w = Open(Codec::kNone, 10'000);
  WriteRecords(w.get(), 45, 1000);  // 1016 framed bytes each: 10 per shard, 5 in the last
  ASSERT_TRUE(w->Close().ok());
  const Manifest& m = w->manifest();
  ASSERT_EQ(m.shards.size(), 5u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m.shards[i].records, 10u) << i;
    EXPECT_GE(m.shards[i].file_bytes, 10'000u) << i;
    EXPECT_LT(m.shards[i].file_bytes, 10'000u + 1016) << i;
  }
  EXPECT_EQ(m.shards[4].records, 5u);
}

TEST_F(ShardWriterTest, RollsNearTargetSizeWithZstd) {
  const uint64_t target = 64 << 10;
  auto w = Open(Codec::kZstd, target);
  WriteRecords(w.get(), 2000, 300);
  ASSERT_TRUE(w->Close().ok());
  const Manifest& m = w->manifest();
  ASSERT_GE(m.shards.size(), 3u);
  for (size_t i = 0; i + 1 < m.shards.size(); ++i) {
    // Within one compressed frame of the target, thanks to the pending-frame estimate.
    EXPECT_GT(m.shards[i].file_bytes, target * 3 / 4) << i;
    EXPECT_LT(m.shards[i].file_bytes, target * 5 / 4) << i;
  }
}

TEST_F(ShardWriterTest, ShardNamesCarryTheRunId) {
  auto w = Open(Codec::kZstd, 4'000);
  WriteRecords(w.get(), 30, 500);
  ASSERT_TRUE(w->Close().ok());
  const Manifest& m = w->manifest();
  const size_t n = m.shards.size();
  ASSERT_GE(n, 2u);
  EXPECT_TRUE(IsRunId(w->run_id()));
  EXPECT_EQ(m.run, w->run_id());
  std::vector<std::string> expected = {"dataset.json"};
  char name[64];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(name, sizeof name, "data-%s-%05zu.tfrecord.zst", w->run_id().c_str(), i);
    EXPECT_EQ(m.shards[i].path, name);
    EXPECT_EQ(m.shards[i].index, std::string(name) + ".idx");
    expected.push_back(name);
    expected.push_back(std::string(name) + ".idx");
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(FileNames(fs_.get(), "/out"), expected);  // nothing provisional or temporary left
}

TEST_F(ShardWriterTest, CountsAddUpAndRecordsReadBackInOrder) {
  auto w = Open(Codec::kGzip, 8'000);
  WriteRecords(w.get(), 100, 400);
  w->SetMetadata("source", "test");
  w->SetFeatures({{"x", {FeatureType::kBytes, 1}}});
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(w->records_written(), 100u);

  auto m = Manifest::Load(fs_.get(), "/out");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->total_records(), 100u);
  EXPECT_EQ(m->codec, Codec::kGzip);
  EXPECT_EQ(m->metadata["source"], "test");
  EXPECT_EQ(m->features["x"].type, FeatureType::kBytes);
  for (const auto& shard : m->shards) {
    auto info = fs_->Stat("/out/" + shard.path);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->size, shard.file_bytes);
    auto index = ShardIndex::Load(fs_.get(), "/out/" + shard.index);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    EXPECT_EQ(index->num_records(), shard.records);
  }
  auto records = ReadAllRecords(fs_.get(), "/out");
  ASSERT_EQ(records.size(), 100u);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(records[i], MakeRecord(i, 400)) << i;
}

TEST_F(ShardWriterTest, LastShardIsNeverEmpty) {
  auto w = Open(Codec::kNone, 1016 * 4);  // exactly 4 records per shard
  WriteRecords(w.get(), 8, 1000);
  ASSERT_TRUE(w->Close().ok());
  ASSERT_EQ(w->manifest().shards.size(), 2u);
  EXPECT_EQ(w->manifest().shards[1].records, 4u);
}

TEST_F(ShardWriterTest, EmptyDatasetHasManifestOnly) {
  auto w = Open(Codec::kZstd, 1000);
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(FileNames(fs_.get(), "/out"), std::vector<std::string>{"dataset.json"});
  EXPECT_EQ(w->manifest().total_records(), 0u);
}

TEST_F(ShardWriterTest, AbortLeavesNothing) {
  {
    auto w = Open(Codec::kZstd, 4'000);
    WriteRecords(w.get(), 30, 500);  // several finished shards plus an open one
    // destroyed without Close
  }
  EXPECT_TRUE(FileNames(fs_.get(), "/out").empty());
}

// The operations of a writer: lock put 1, dataset.json put 2, release put 3.
TEST_F(ShardWriterTest, FailedManifestPublicationLeavesNothing) {
  io::FaultInjectionFileSystem faulty(fs_.get(), *io::FaultPlan::Parse("fail:put:2"));
  auto w = Open(Codec::kNone, 4'000, &faulty);
  WriteRecords(w.get(), 20, 500);
  Status s = w->Close();
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_NE(s.message().find("injected fault: put /out/dataset.json"), std::string::npos);
  EXPECT_TRUE(FileNames(fs_.get(), "/out").empty());
  EXPECT_EQ(w->Close(), s);                           // sticky
  EXPECT_TRUE(Open(Codec::kNone, 4'000) != nullptr);  // the lock was released
}

TEST_F(ShardWriterTest, FailedShardCloseLeavesNothing) {
  io::FaultInjectionFileSystem faulty(fs_.get(), *io::FaultPlan::Parse("fail:close:3"));
  auto w = Open(Codec::kNone, 4'000, &faulty);
  Status first;
  for (uint64_t i = 0; i < 40 && first.ok(); ++i) first = w->Write(MakeRecord(i, 500));
  Status closed = w->Close();
  if (first.ok()) first = closed;
  EXPECT_EQ(first.code(), StatusCode::kIoError) << first.ToString();
  EXPECT_EQ(closed, first);
  EXPECT_EQ(FileNames(fs_.get(), "/out"), std::vector<std::string>{});
}

TEST_F(ShardWriterTest, FailedShardOpenIsSticky) {
  io::FaultInjectionFileSystem faulty(fs_.get(), *io::FaultPlan::Parse("fail:create:2"));
  auto w = Open(Codec::kNone, 4'000, &faulty);
  Status first;
  for (uint64_t i = 0; i < 20 && first.ok(); ++i) first = w->Write(MakeRecord(i, 500));
  EXPECT_EQ(first.code(), StatusCode::kIoError) << first.ToString();
  EXPECT_EQ(w->Write("more"), first);
  EXPECT_EQ(w->Close(), first);
  EXPECT_TRUE(FileNames(fs_.get(), "/out").empty());
}

TEST_F(ShardWriterTest, RefusesToWriteOverADataset) {
  auto w = Open(Codec::kNone, 4'000);
  WriteRecords(w.get(), 3, 100);
  ASSERT_TRUE(w->Close().ok());
  auto again = ShardWriter::Open(fs_.get(), "/out", {});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
}

TEST_F(ShardWriterTest, WriteAfterCloseFails) {
  auto w = Open(Codec::kNone, 4'000);
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(w->Write("late").code(), StatusCode::kFailedPrecondition);
}

TEST_F(ShardWriterTest, BadPrefixRefused) {
  ShardWriterOptions options;
  options.prefix = "a/b";
  EXPECT_EQ(ShardWriter::Open(fs_.get(), "/out", options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ShardWriterLocalTest, LeavesOnlyFinalFilesOnDisk) {
  char tmpl[] = "/tmp/sluice_shard_writer_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = std::string(tmpl) + "/ds";
  ShardWriterOptions options;
  options.target_shard_bytes = 5'000;
  options.prefix = "train";
  auto w = ShardWriter::Open(io::LocalFileSystem(), dir, options);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (uint64_t i = 0; i < 50; ++i) ASSERT_TRUE((*w)->Write(MakeRecord(i, 300)).ok());
  ASSERT_TRUE((*w)->Close().ok());
  size_t shards = (*w)->manifest().shards.size();
  auto names = FileNames(io::LocalFileSystem(), dir);
  EXPECT_EQ(names.size(), 2 * shards + 1);
  for (const auto& n : names) {
    EXPECT_TRUE(n == "dataset.json" || n.find((*w)->run_id()) != std::string::npos) << n;
    EXPECT_EQ(n.find(".tmp"), std::string::npos) << n;
  }
  EXPECT_EQ(ReadAllRecords(io::LocalFileSystem(), dir).size(), 50u);
  std::filesystem::remove_all(tmpl);
}

// The crash test in-process: storage freezes at operation k (what a kill -9 there leaves),
// for every k of a whole write. Each time the directory must hold either no dataset (and
// readers refuse it) or the complete one; and the next writer must reclaim what the dead
// one left and publish a complete dataset with nothing left over.
TEST(ShardWriterCrashTest, CrashAtEveryOperationLeavesNothingOrTheWholeDataset) {
  constexpr uint64_t kRecords = 40;
  testing::FakeProcesses processes;
  auto convert = [&](io::FileSystem* fs, int64_t pid) -> Status {
    ShardWriterOptions options;
    options.record.codec = Codec::kZstd;
    options.record.zstd_frame_bytes = 2'000;
    options.target_shard_bytes = 3'000;
    options.probe = processes.As(pid);
    SLUICE_ASSIGN_OR_RETURN(auto w, ShardWriter::Open(fs, "/out", options));
    for (uint64_t i = 0; i < kRecords; ++i) SLUICE_RETURN_IF_ERROR(w->Write(MakeRecord(i, 300)));
    auto side = w->WriteSideFile("classes", ".txt", "a\nb\n");
    SLUICE_RETURN_IF_ERROR(side.status());
    w->SetMetadata("classes_file", *side);
    return w->Close();
  };
  auto expect_complete = [&](io::FileSystem* fs) {
    auto records = ReadAllRecords(fs, "/out");
    ASSERT_EQ(records.size(), kRecords);
    for (uint64_t i = 0; i < kRecords; ++i) ASSERT_EQ(records[i], MakeRecord(i, 300)) << i;
    auto m = Manifest::Load(fs, "/out");
    ASSERT_TRUE(m.ok());
    for (const auto& shard : m->shards) {
      auto info = fs->Stat("/out/" + shard.path);
      ASSERT_TRUE(info.ok() && info->size == shard.file_bytes) << shard.path;
    }
    EXPECT_TRUE(fs->Exists("/out/" + m->metadata["classes_file"]));
  };

  uint64_t operations = 0;
  {
    auto fs = io::NewMemoryFileSystem();
    io::FaultInjectionFileSystem counting(fs.get(), {});
    ASSERT_TRUE(convert(&counting, 1).ok());
    operations = counting.total();
  }
  ASSERT_GT(operations, 20u);
  uint64_t absent = 0, complete = 0;
  for (uint64_t k = 1; k <= operations; ++k) {
    SCOPED_TRACE("frozen at operation " + std::to_string(k));
    auto fs = io::NewMemoryFileSystem();
    io::FaultInjectionFileSystem frozen(fs.get(),
                                        *io::FaultPlan::Parse("freeze:any:" + std::to_string(k)));
    const int64_t pid = 1000 + static_cast<int64_t>(k);
    (void)convert(&frozen, pid);
    ASSERT_TRUE(frozen.frozen());
    processes.Kill(pid);
    if (fs->Exists("/out/dataset.json")) {
      ++complete;
      expect_complete(fs.get());
    } else {
      ++absent;
      auto r = ResolveShards(fs.get(), "/out");
      ASSERT_FALSE(r.ok());  // never a smaller dataset
      EXPECT_TRUE(r.status().code() == StatusCode::kFailedPrecondition ||
                  r.status().code() == StatusCode::kNotFound)
          << r.status().ToString();
      ASSERT_TRUE(convert(fs.get(), pid + 100'000).ok());  // the rerun reclaims and publishes
      expect_complete(fs.get());
    }
    auto m = Manifest::Load(fs.get(), "/out");
    ASSERT_TRUE(m.ok());
    auto left = FindLeftovers(fs.get(), "/out", &*m, {}, processes.As(1));
    ASSERT_TRUE(left.ok());
    // After a rerun nothing is left over; after a crash past the commit point at most the
    // dead writer's lock (verify reports it, clean or the next writer removes it).
    for (const auto& l : *left)
      EXPECT_TRUE(WriterLock::IsEntryName(io::Basename(l.path))) << l.path;
  }
  EXPECT_GT(absent, 0u);
  EXPECT_GT(complete, 0u);
  std::printf("crash points: %llu (dataset absent %llu, complete %llu)\n",
              static_cast<unsigned long long>(operations), static_cast<unsigned long long>(absent),
              static_cast<unsigned long long>(complete));
}

TEST(ShardWriterConcurrencyTest, ConcurrentWritersGiveExactlyOneCompleteDataset) {
  auto fs = io::NewMemoryFileSystem();
  testing::FakeProcesses processes;
  constexpr int kWriters = 6;
  std::vector<Status> results(kWriters);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      ShardWriterOptions options;
      options.target_shard_bytes = 2'000;
      options.probe = processes.As(t + 1);
      auto w = ShardWriter::Open(fs.get(), "/out", options);
      if (!w.ok()) {
        results[t] = w.status();
        return;
      }
      for (uint64_t i = 0; i < static_cast<uint64_t>(20 + 5 * t) && results[t].ok(); ++i) {
        results[t] = (*w)->Write(MakeRecord(i, 200));
      }
      if (results[t].ok()) results[t] = (*w)->Close();
    });
  }
  for (auto& th : threads) th.join();
  int winners = 0, winner = -1;
  for (int t = 0; t < kWriters; ++t) {
    if (results[t].ok()) {
      ++winners;
      winner = t;
    } else {
      EXPECT_TRUE(results[t].code() == StatusCode::kFailedPrecondition ||
                  results[t].code() == StatusCode::kAlreadyExists)
          << results[t].ToString();
    }
  }
  ASSERT_EQ(winners, 1);
  EXPECT_EQ(ReadAllRecords(fs.get(), "/out").size(), 20u + 5 * winner);
  auto m = Manifest::Load(fs.get(), "/out");
  ASSERT_TRUE(m.ok());
  auto left = FindLeftovers(fs.get(), "/out", &*m);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST_F(ShardWriterTest, OverwriteReplacesTheDatasetWhole) {
  auto first = Open(Codec::kNone, 2'000);
  WriteRecords(first.get(), 30, 100);
  ASSERT_TRUE(first->Close().ok());
  ShardWriterOptions options;
  options.overwrite = true;
  auto second = ShardWriter::Open(fs_.get(), "/out", options);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(ReadAllRecords(fs_.get(), "/out").size(), 30u);  // the old one until the commit
  ASSERT_TRUE((*second)->Write("only").ok());
  ASSERT_TRUE((*second)->Close().ok());
  EXPECT_EQ(ReadAllRecords(fs_.get(), "/out"), std::vector<std::string>{"only"});
  for (const auto& n : FileNames(fs_.get(), "/out")) {
    EXPECT_TRUE(n == "dataset.json" || n.find((*second)->run_id()) != std::string::npos) << n;
  }
}

TEST_F(ShardWriterTest, PartWritersShareARunAndPublishThroughOnePublisher) {
  PublishOptions publish;
  auto publisher = DatasetPublisher::Begin(fs_.get(), "/out", publish);
  ASSERT_TRUE(publisher.ok());
  Manifest all;
  for (const char* part : {"r0000", "r0001"}) {
    ShardWriterOptions options;
    options.run_id = (*publisher)->run_id();
    options.part = part;
    auto w = ShardWriter::Open(fs_.get(), "/out", options);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write(part).ok());
    ASSERT_TRUE((*w)->Close().ok());
    for (const auto& shard : (*w)->manifest().shards) all.shards.push_back(shard);
  }
  EXPECT_FALSE(fs_->Exists("/out/dataset.json"));  // parts never publish
  ASSERT_TRUE((*publisher)->Commit(all).ok());
  EXPECT_EQ(ReadAllRecords(fs_.get(), "/out"), (std::vector<std::string>{"r0000", "r0001"}));
  EXPECT_EQ(all.shards[1].path, "data-" + (*publisher)->run_id() + "-r0001-00000.tfrecord.zst");
}

}  // namespace
}  // namespace sluice::format

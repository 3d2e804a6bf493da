#include "sluice/format/shard_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sluice/format/record_reader.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {
namespace {

// Delegates to an in-memory file system, failing the operations a test asks to fail.
class FaultyFileSystem final : public io::FileSystem {
 public:
  std::string fail_write_suffix;  // OpenForWrite of a path ending in this fails
  std::string fail_rename_match;  // Rename to a path containing this fails

  std::string_view name() const override { return "faulty"; }
  Result<std::unique_ptr<io::RandomAccessFile>> OpenForRead(const std::string& p) override {
    return base_->OpenForRead(p);
  }
  Result<std::unique_ptr<io::WritableFile>> OpenForWrite(const std::string& p,
                                                         const io::WriteOptions& o) override {
    if (!fail_write_suffix.empty() && p.size() >= fail_write_suffix.size() &&
        p.compare(p.size() - fail_write_suffix.size(), std::string::npos, fail_write_suffix) == 0) {
      return IoError("injected: cannot create " + p);
    }
    return base_->OpenForWrite(p, o);
  }
  Result<io::FileInfo> Stat(const std::string& p) override { return base_->Stat(p); }
  Result<std::vector<io::FileInfo>> List(const std::string& d) override { return base_->List(d); }
  Status Delete(const std::string& p) override { return base_->Delete(p); }
  Status Rename(const std::string& from, const std::string& to) override {
    if (!fail_rename_match.empty() && to.find(fail_rename_match) != std::string::npos) {
      return IoError("injected: cannot rename to " + to);
    }
    return base_->Rename(from, to);
  }
  Status CreateDirs(const std::string& d) override { return base_->CreateDirs(d); }

 private:
  std::unique_ptr<io::FileSystem> base_ = io::NewMemoryFileSystem();
};

// Record i: `size` bytes, deterministic, mildly compressible.
std::string MakeRecord(uint64_t i, size_t size) {
  std::mt19937 rng(static_cast<uint32_t>(i));
  std::string r(size, '\0');
  for (auto& c : r) c = static_cast<char>('a' + rng() % 8);
  return r;
}

std::vector<std::string> FileNames(io::FileSystem* fs, const std::string& dir) {
  std::vector<std::string> names;
  auto list = fs->List(dir);
  if (!list.ok()) return names;
  for (const auto& e : *list) names.emplace_back(io::Basename(e.path));
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

TEST_F(ShardWriterTest, FinalNamesCarryTheShardCount) {
  auto w = Open(Codec::kZstd, 4'000);
  WriteRecords(w.get(), 30, 500);
  ASSERT_TRUE(w->Close().ok());
  const Manifest& m = w->manifest();
  const size_t n = m.shards.size();
  ASSERT_GE(n, 2u);
  std::vector<std::string> expected = {"dataset.json"};
  char name[64];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(name, sizeof name, "data-%05zu-of-%05zu.tfrecord.zst", i, n);
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

TEST_F(ShardWriterTest, FailedManifestWriteLeavesNoFinalNames) {
  FaultyFileSystem faulty;
  faulty.fail_write_suffix = "dataset.json";
  auto w = Open(Codec::kNone, 4'000, &faulty);
  WriteRecords(w.get(), 20, 500);
  Status s = w->Close();
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_TRUE(FileNames(&faulty, "/out").empty());
  EXPECT_EQ(w->Close(), s);  // sticky
}

TEST_F(ShardWriterTest, FailedRenameLeavesNoFinalNames) {
  FaultyFileSystem faulty;
  faulty.fail_rename_match = "-00002-of-";  // the third shard cannot take its final name
  auto w = Open(Codec::kNone, 4'000, &faulty);
  WriteRecords(w.get(), 40, 500);
  EXPECT_FALSE(w->Close().ok());
  EXPECT_TRUE(FileNames(&faulty, "/out").empty());
}

TEST_F(ShardWriterTest, FailedShardOpenIsSticky) {
  FaultyFileSystem faulty;
  faulty.fail_write_suffix = "-00001.tfrecord";  // the second shard cannot be created
  auto w = Open(Codec::kNone, 4'000, &faulty);
  Status first;
  for (uint64_t i = 0; i < 20 && first.ok(); ++i) first = w->Write(MakeRecord(i, 500));
  EXPECT_EQ(first.code(), StatusCode::kIoError) << first.ToString();
  EXPECT_EQ(w->Write("more"), first);
  EXPECT_EQ(w->Close(), first);
  EXPECT_TRUE(FileNames(&faulty, "/out").empty());
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
    EXPECT_TRUE(n == "dataset.json" || n.find("-of-") != std::string::npos) << n;
    EXPECT_EQ(n.find(".tmp"), std::string::npos) << n;
  }
  EXPECT_EQ(ReadAllRecords(io::LocalFileSystem(), dir).size(), 50u);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace sluice::format

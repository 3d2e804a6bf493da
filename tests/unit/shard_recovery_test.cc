// ShardReader::Open on a shard it cannot open as it is (issue 13, items 6 and 7): a truncated
// shard with or without its index, a corrupt, empty, foreign or stale index. kFail names the
// problem; kRecover serves exactly the records that read intact, in order, and says what was
// lost. And random access to a gzip shard (one frame) after a bit flip keeps the records
// decoded before the damage instead of failing them all.
#include <gtest/gtest.h>

#include "format/framing.h"
#include "sluice/format/shard_index.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::MakeRecords;
using testing::ReadShard;
using testing::SkipMode;
using testing::WriteShard;

class ShardRecovery : public ::testing::TestWithParam<Codec> {
 protected:
  void SetUp() override {
    records_ = MakeRecords(60, 10, 90);
    RecordWriterOptions o;
    o.codec = GetParam();
    o.zstd_frame_bytes = 600;
    path_ = "/d/shard.tfrecord" + std::string(CodecExtension(GetParam()));
    ASSERT_TRUE(WriteShard(fs_.get(), path_, records_, o).ok());
  }
  std::string Bytes(const std::string& path) { return *fs_->ReadAll(path); }
  void Put(const std::string& path, const std::string& bytes) {
    ASSERT_TRUE(fs_->WriteAll(path, bytes).ok());
  }
  void Truncate(size_t drop) {
    std::string bytes = Bytes(path_);
    Put(path_, bytes.substr(0, bytes.size() - drop));
  }
  Result<std::unique_ptr<ShardReader>> Open(ShardDamagePolicy policy) {
    ShardReaderOptions o;
    o.on_damage = policy;
    return ShardReader::Open(fs_.get(), path_, o);
  }
  // Opens with kFail (must fail with DataLoss containing `problem`), then with kRecover,
  // and returns the recovered reader's records (all of which must read).
  std::vector<std::string> Recover(const std::string& problem, const ShardDamage** damage) {
    auto failed = Open(ShardDamagePolicy::kFail);
    EXPECT_EQ(failed.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(failed.status().message().find(problem), std::string::npos)
        << failed.status().message();
    auto reader = Open(ShardDamagePolicy::kRecover);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (!reader.ok()) return {};
    recovered_ = std::move(*reader);
    EXPECT_TRUE(recovered_->damage().has_value());
    *damage = &*recovered_->damage();
    EXPECT_EQ((*damage)->problem.message(), failed.status().message());
    std::vector<std::string> out;
    std::string r;
    for (uint64_t i = 0; i < recovered_->num_records(); ++i) {
      Status s = recovered_->Read(i, &r);
      EXPECT_TRUE(s.ok()) << s.ToString();
      out.push_back(r);
    }
    return out;
  }
  std::vector<std::string> Prefix(size_t n) const {
    return std::vector<std::string>(records_.begin(), records_.begin() + n);
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  std::vector<std::string> records_;
  std::string path_;
  std::unique_ptr<ShardReader> recovered_;
};

TEST_P(ShardRecovery, TruncatedShardServesItsIntactPrefix) {
  Truncate(40);
  const ShardDamage* damage = nullptr;
  auto got = Recover("index does not match shard", &damage);
  ASSERT_NE(damage, nullptr);
  ASSERT_FALSE(got.empty());
  ASSERT_LT(got.size(), records_.size());
  EXPECT_EQ(got, Prefix(got.size()));
  EXPECT_EQ(damage->records_lost, records_.size() - got.size());
  EXPECT_FALSE(damage->lost.empty());
  std::string line = damage->Describe(got.size());
  EXPECT_NE(line.find("read " + std::to_string(got.size()) + " intact record(s)"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("lost " + std::to_string(damage->records_lost) + " record(s)"),
            std::string::npos)
      << line;
}

TEST_P(ShardRecovery, TruncatedShardWithoutIndexServesItsIntactPrefix) {
  Truncate(40);
  ASSERT_TRUE(fs_->Delete(path_ + ".idx").ok());
  const ShardDamage* damage = nullptr;
  auto got = Recover("truncated", &damage);
  ASSERT_NE(damage, nullptr);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got, Prefix(got.size()));
  EXPECT_EQ(damage->records_lost, 0u);  // no index said how many there were
  EXPECT_FALSE(damage->lost.empty());
}

TEST_P(ShardRecovery, CorruptIndexIsReplacedByTheShardsRecords) {
  std::string idx = Bytes(path_ + ".idx");
  idx[idx.size() / 2] ^= 0x08;
  Put(path_ + ".idx", idx);
  const ShardDamage* damage = nullptr;
  EXPECT_EQ(Recover("corrupt index", &damage), records_);
  ASSERT_NE(damage, nullptr);
  EXPECT_TRUE(damage->lost.empty());
  EXPECT_EQ(damage->records_lost, 0u);
}

TEST_P(ShardRecovery, ZeroByteIndexIsReplacedByTheShardsRecords) {
  Put(path_ + ".idx", "");
  const ShardDamage* damage = nullptr;
  EXPECT_EQ(Recover("corrupt index", &damage), records_);
}

TEST_P(ShardRecovery, IndexOfAnotherShardIsReplacedAndLosesNothing) {
  RecordWriterOptions o;
  o.codec = GetParam();
  ASSERT_TRUE(WriteShard(fs_.get(), "/d/other", MakeRecords(90, 10, 90, 7), o).ok());
  Put(path_ + ".idx", Bytes("/d/other.idx"));
  const ShardDamage* damage = nullptr;
  EXPECT_EQ(Recover("index does not match shard", &damage), records_);
  ASSERT_NE(damage, nullptr);
  EXPECT_EQ(damage->records_lost, 0u);  // the other shard's count says nothing about this one
}

INSTANTIATE_TEST_SUITE_P(Codecs, ShardRecovery,
                         ::testing::Values(Codec::kNone, Codec::kGzip, Codec::kZstd),
                         [](const auto& info) { return std::string(CodecName(info.param)); });

// An index left from an earlier version of an uncompressed shard of the very same size:
// the codec and the size agree, the record boundaries do not.
TEST(ShardRecoveryStale, StaleIndexOfTheSameSizeIsNoticed) {
  auto fs = io::NewMemoryFileSystem();
  const std::vector<std::string> before = {std::string(10, 'a'), std::string(20, 'b')};
  const std::vector<std::string> after = {std::string(20, 'c'), std::string(10, 'd')};
  RecordWriterOptions none;
  none.codec = Codec::kNone;
  ASSERT_TRUE(WriteShard(fs.get(), "/s", before, none).ok());
  std::string stale = *fs->ReadAll("/s.idx");
  ASSERT_TRUE(WriteShard(fs.get(), "/s", after, none).ok());
  ASSERT_TRUE(fs->WriteAll("/s.idx", stale).ok());
  auto strict = ShardReader::Open(fs.get(), "/s");
  ASSERT_EQ(strict.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(strict.status().message().find("record 0 at offset 0 does not match the index"),
            std::string::npos)
      << strict.status().message();
  ShardReaderOptions o;
  o.on_damage = ShardDamagePolicy::kRecover;
  auto reader = ShardReader::Open(fs.get(), "/s", o);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string r;
  ASSERT_EQ((*reader)->num_records(), 2u);
  ASSERT_TRUE((*reader)->Read(0, &r).ok());
  EXPECT_EQ(r, after[0]);
}

// A gzip shard is one frame: a bit flip late in the deflate data or in the gzip trailer used
// to fail every record of the shard, while the sequential reader (and `sluice verify`)
// read the records before it. Random access now serves every record decoded before the
// damage (CRC-checked like any other) and fails only the records after it.
TEST(ShardRecoveryGzip, BitFlipCostsOnlyTheRecordsAfterIt) {
  auto fs = io::NewMemoryFileSystem();
  auto records = MakeRecords(200, 20, 200, 3);
  RecordWriterOptions o;
  o.codec = Codec::kGzip;
  ASSERT_TRUE(WriteShard(fs.get(), "/g.tfrecord.gz", records, o).ok());
  const std::string good = *fs->ReadAll("/g.tfrecord.gz");
  for (size_t at : {good.size() - 6, good.size() - 2, good.size() - 400, good.size() * 2 / 3}) {
    std::string bad = good;
    bad[at] ^= 0x20;
    ASSERT_TRUE(fs->WriteAll("/g.tfrecord.gz", bad).ok());
    auto sequential = ReadShard(fs.get(), "/g.tfrecord.gz", SkipMode());
    ASSERT_TRUE(sequential.status.ok());
    auto reader = ShardReader::Open(fs.get(), "/g.tfrecord.gz");
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<std::string> served;
    std::string r;
    for (uint64_t i = 0; i < records.size(); ++i) {
      Status s = (*reader)->Read(i, &r);
      if (s.ok()) {
        EXPECT_EQ(r, records[i]) << "flip at " << at << ", record " << i;
        served.push_back(r);
      } else {
        EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
      }
    }
    EXPECT_GE(served.size(), sequential.records.size()) << "flip at " << at;
    if (at >= good.size() - 8) {
      EXPECT_EQ(served, records) << "a flip in the trailer";
    }
  }
}

}  // namespace
}  // namespace sluice::format

// ShardReader on uncompressed shards read forward record by record (an unshuffled pass):
// the reader reads ahead, so the pass makes a read per 256 KiB, not per record, and every
// record is still checked (CRCs, truncation) as a single read would check it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "sluice/format/shard_index.h"
#include "sluice/io/cache/simulated_remote.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::MakeRecords;
using testing::WriteShard;

class ShardReadAhead : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice_read_ahead_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/shard.tfrecord";
    records_ = MakeRecords(5000, 10, 300);
    RecordWriterOptions o;
    o.codec = Codec::kNone;
    ASSERT_TRUE(WriteShard(io::LocalFileSystem(), path_, records_, o).ok());
    log_ = dir_ + "/reads.log";
    io::cache::SimulatedRemoteOptions counting;
    counting.log_path = log_;
    counted_ =
        std::make_unique<io::cache::SimulatedRemoteFileSystem>(io::LocalFileSystem(), counting);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Reads of the shard itself (not of its index) since the last call, from the read log.
  uint64_t ShardReads() {
    std::ifstream log(log_);
    std::string path;
    uint64_t offset = 0, bytes = 0, n = 0;
    while (log >> path >> offset >> bytes) n += path == path_;
    const uint64_t since = n - seen_;
    seen_ = n;
    return since;
  }
  // Reads records first, first + step, ... and checks each; the reads of the shard it took.
  uint64_t ReadsOfAPass(uint64_t first, uint64_t step) {
    auto reader = Open();
    if (reader == nullptr) return UINT64_MAX;
    ShardReads();
    std::string out;
    for (uint64_t i = first; i < records_.size(); i += step) {
      Status s = reader->Read(i, &out);
      if (!s.ok() || out != records_[i]) {
        ADD_FAILURE() << "record " << i << ": " << s.ToString();
        break;
      }
    }
    return ShardReads();
  }
  std::unique_ptr<ShardReader> Open() {
    auto reader = ShardReader::Open(counted_.get(), path_);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    return reader.ok() ? std::move(*reader) : nullptr;
  }
  uint64_t ShardBytes() const { return std::filesystem::file_size(path_); }

  std::string dir_, path_;
  std::vector<std::string> records_;
  std::string log_;  // the read log of counted_
  uint64_t seen_ = 0;
  std::unique_ptr<io::cache::SimulatedRemoteFileSystem> counted_;
};

TEST_F(ShardReadAhead, ForwardPassReadsAheadAndReturnsEveryRecordExactly) {
  // Two single reads start the pass, then one per 256 KiB (one read per record: 5000).
  EXPECT_LE(ReadsOfAPass(0, 1), ShardBytes() / (256 << 10) + 3);
}

TEST_F(ShardReadAhead, StridedPassAsThreadsTakingTurnsStillReadsAhead) {
  EXPECT_LE(ReadsOfAPass(1, 3), ShardBytes() / (256 << 10) + 3);
}

TEST_F(ShardReadAhead, RandomReadsDoNotReadAhead) {
  auto reader = Open();
  ASSERT_NE(reader, nullptr);
  std::vector<uint64_t> order(records_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  ShardReads();
  std::string out;
  for (uint64_t i : order) {
    ASSERT_TRUE(reader->Read(i, &out).ok()) << i;
    ASSERT_EQ(out, records_[i]) << i;
  }
  // One read per record, none ahead (a forward step happens by chance, two in a row hardly).
  EXPECT_LE(ShardReads(), records_.size() + 2);
}

TEST_F(ShardReadAhead, ACorruptRecordInsideTheBufferedBytesIsStillCaught) {
  auto reader = Open();
  ASSERT_NE(reader, nullptr);
  IndexRecord r;
  IndexFrame f;
  ASSERT_TRUE(reader->Locate(100, &r, &f).ok());
  {  // flip a payload byte of record 100 on disk
    FILE* file = std::fopen(path_.c_str(), "r+b");
    ASSERT_NE(file, nullptr);
    std::fseek(file, static_cast<long>(f.file_offset + r.offset_in_frame + 12), SEEK_SET);
    std::fputc(records_[100][0] ^ 0x5a, file);
    std::fclose(file);
  }
  std::string out;
  for (uint64_t i = 0; i < 300; ++i) {
    Status s = reader->Read(i, &out);
    if (i == 100) {
      EXPECT_EQ(s.code(), StatusCode::kDataLoss);
      EXPECT_NE(s.message().find("record 100"), std::string::npos) << s.ToString();
    } else {
      ASSERT_TRUE(s.ok()) << i << " " << s.ToString();
      ASSERT_EQ(out, records_[i]) << i;
    }
  }
}

TEST_F(ShardReadAhead, AShardCutShortWhileReadFailsTheRecordsItLostAndNoOthers) {
  auto reader = Open();
  ASSERT_NE(reader, nullptr);
  std::string out;
  ASSERT_TRUE(reader->Read(0, &out).ok());  // the first 256 KiB are buffered now
  IndexRecord r;
  IndexFrame f;
  ASSERT_TRUE(reader->Locate(4000, &r, &f).ok());
  const uint64_t cut = f.file_offset + r.offset_in_frame + 5;  // inside record 4000
  std::filesystem::resize_file(path_, cut);
  for (uint64_t i = 1; i < records_.size(); ++i) {
    Status s = reader->Read(i, &out);
    if (i < 4000) {
      ASSERT_TRUE(s.ok()) << i << " " << s.ToString();
      ASSERT_EQ(out, records_[i]) << i;
    } else {
      ASSERT_EQ(s.code(), StatusCode::kDataLoss) << i;
      EXPECT_NE(s.message().find("truncated record"), std::string::npos) << s.ToString();
    }
  }
}

}  // namespace
}  // namespace sluice::format

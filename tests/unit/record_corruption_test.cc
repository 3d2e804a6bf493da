// The record reader under damage: every byte flipped, every tail truncated, lengths over the
// cap, foreign files. Strict mode must name the offset; skip mode must return exactly the
// intact records; nothing may ever return a corrupt payload or join two records.
#include <gtest/gtest.h>

#include "format/framing.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/shard_index.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::MakeRecords;
using testing::ReadShard;
using testing::SkipMode;
using testing::TolerateTornTail;
using testing::WriteShard;

class RecordCorruption : public ::testing::Test {
 protected:
  // Writes `records` with `codec` and returns the shard's bytes.
  std::string Write(const std::vector<std::string>& records, Codec codec,
                    size_t zstd_frame_bytes = 200) {
    RecordWriterOptions o;
    o.codec = codec;
    o.zstd_frame_bytes = zstd_frame_bytes;
    EXPECT_TRUE(WriteShard(fs_.get(), "/good", records, o).ok());
    auto index = ShardIndex::Load(fs_.get(), "/good.idx");
    EXPECT_TRUE(index.ok());
    index_ = *index;
    return *fs_->ReadAll("/good");
  }
  void Put(const std::string& bytes) { ASSERT_TRUE(fs_->WriteAll(bad_, bytes).ok()); }
  void PutZstd(const std::string& bytes) {
    bad_ = "/bad.tfrecord.zst";
    Put(bytes);
  }
  static std::vector<uint64_t> Offsets(const std::vector<std::string>& records) {
    std::vector<uint64_t> out;
    uint64_t at = 0;
    for (const auto& r : records) {
      out.push_back(at);
      at += r.size() + kRecordOverheadBytes;
    }
    out.push_back(at);
    return out;
  }
  static std::vector<std::string> Without(std::vector<std::string> records,
                                          const std::vector<size_t>& drop) {
    for (auto it = drop.rbegin(); it != drop.rend(); ++it) records.erase(records.begin() + *it);
    return records;
  }
  static bool IsSubsequence(const std::vector<std::string>& part,
                            const std::vector<std::string>& whole) {
    size_t j = 0;
    for (const auto& p : part) {
      while (j < whole.size() && whole[j] != p) ++j;
      if (j == whole.size()) return false;
      ++j;
    }
    return true;
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  ShardIndex index_;
  std::string bad_ = "/bad.tfrecord";
};

TEST_F(RecordCorruption, ChecksumMismatchAtEveryByte) {
  auto records = MakeRecords(8, 0, 40);
  std::string good = Write(records, Codec::kNone);
  auto offsets = Offsets(records);
  for (size_t k = 0; k < good.size(); ++k) {
    std::string bad = good;
    bad[k] ^= 0x5A;
    Put(bad);
    size_t j = std::upper_bound(offsets.begin(), offsets.end(), k) - offsets.begin() - 1;
    auto strict = ReadShard(fs_.get(), bad_);
    ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss) << k;
    EXPECT_NE(strict.status.message().find(bad_ + ": offset " + std::to_string(offsets[j]) + ":"),
              std::string::npos)
        << strict.status.message();
    EXPECT_NE(strict.status.message().find("(record " + std::to_string(j) + ")"), std::string::npos)
        << strict.status.message();
    EXPECT_EQ(strict.records, std::vector<std::string>(records.begin(), records.begin() + j));

    auto skip = ReadShard(fs_.get(), bad_, SkipMode());
    ASSERT_TRUE(skip.status.ok()) << k << ": " << skip.status.ToString();
    EXPECT_EQ(skip.records, Without(records, {j})) << "flipped byte " << k;
    ASSERT_EQ(skip.skipped.size(), 1u) << k;
    EXPECT_EQ(skip.skipped[0].offset, offsets[j]);
    EXPECT_EQ(skip.skipped[0].length, offsets[j + 1] - offsets[j]);
    EXPECT_FALSE(skip.skipped[0].reason.empty());
  }
}

TEST_F(RecordCorruption, ZstdDamagedFrameIsDroppedWhole) {
  auto records = MakeRecords(40, 0, 60);
  std::string good = Write(records, Codec::kZstd);
  ASSERT_GT(index_.frames().size(), 5u);
  for (size_t k = 0; k < good.size(); ++k) {
    std::string bad = good;
    bad[k] ^= 0x5A;
    PutZstd(bad);
    uint32_t f = 0;
    while (f + 1 < index_.frames().size() && index_.frames()[f + 1].file_offset <= k) ++f;
    std::vector<size_t> in_frame;
    for (size_t i = 0; i < records.size(); ++i) {
      if (index_.records()[i].frame == f) in_frame.push_back(i);
    }
    auto strict = ReadShard(fs_.get(), bad_);
    ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss) << "flipped byte " << k;
    EXPECT_NE(strict.status.message().find("file offset " +
                                           std::to_string(index_.frames()[f].file_offset)),
              std::string::npos)
        << strict.status.message();

    auto skip = ReadShard(fs_.get(), bad_, SkipMode());
    ASSERT_TRUE(skip.status.ok()) << k << ": " << skip.status.ToString();
    EXPECT_EQ(skip.records, Without(records, in_frame)) << "flipped byte " << k;
    ASSERT_FALSE(skip.skipped.empty());
    bool named = false;
    for (const auto& s : skip.skipped) {
      named |= s.in_compressed_file && s.offset == index_.frames()[f].file_offset;
    }
    EXPECT_TRUE(named) << "flipped byte " << k;
  }
}

TEST_F(RecordCorruption, TruncatedTail) {
  auto records = MakeRecords(6, 1, 50);
  std::string good = Write(records, Codec::kNone);
  auto offsets = Offsets(records);
  std::vector<std::string> earlier(records.begin(), records.end() - 1);
  for (size_t cut = offsets[records.size() - 1] + 1; cut < good.size(); ++cut) {
    Put(good.substr(0, cut));
    auto strict = ReadShard(fs_.get(), bad_);
    ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss) << cut;
    EXPECT_NE(strict.status.message().find("truncated"), std::string::npos);
    EXPECT_EQ(strict.records, earlier);

    auto tolerate = ReadShard(fs_.get(), bad_, TolerateTornTail());
    ASSERT_TRUE(tolerate.status.ok()) << cut << ": " << tolerate.status.ToString();
    EXPECT_EQ(tolerate.records, earlier);
    ASSERT_EQ(tolerate.warnings.size(), 1u);
    EXPECT_NE(tolerate.warnings[0].find("torn tail"), std::string::npos);
    ASSERT_EQ(tolerate.skipped.size(), 1u);
    EXPECT_EQ(tolerate.skipped[0].offset, offsets[records.size() - 1]);
    EXPECT_EQ(tolerate.skipped[0].length, cut - offsets[records.size() - 1]);

    auto skip = ReadShard(fs_.get(), bad_, SkipMode());
    ASSERT_TRUE(skip.status.ok()) << cut;
    EXPECT_EQ(skip.records, earlier);
  }
}

// The fuzzer's finding of issue 13: intact records at 0, 16 and 33; at 56 a header with a
// valid length CRC claims 40 bytes, past the end of the file; at 72, inside that claim, an
// intact (empty) record. A torn last record whose payload holds framed bytes, or a damaged
// length field followed by a good record? The bytes cannot tell: tolerate_torn_tail must
// not drop the record at 72 silently, so strict mode fails naming both offsets; skip mode
// keeps it. A torn tail without an intact record inside stays tolerated (TruncatedTail).
TEST_F(RecordCorruption, TruncatedRecordHidingAnIntactRecordIsNotATornTail) {
  std::string bytes;
  for (const std::string& r : {std::string(), std::string("\x01"), std::string("ABCDEFG")}) {
    AppendFramedRecord(r, &bytes);
  }
  ASSERT_EQ(bytes.size(), 56u);
  bytes.resize(56 + kRecordHeaderBytes);
  EncodeRecordHeader(40, &bytes[56]);
  bytes += std::string("\x5d\x5e\x5f\x00", 4);  // the claimed payload's first bytes
  AppendFramedRecord("", &bytes);
  ASSERT_EQ(bytes.size(), 88u);
  Put(bytes);

  auto tolerate = ReadShard(fs_.get(), bad_, TolerateTornTail());
  ASSERT_EQ(tolerate.status.code(), StatusCode::kDataLoss);
  EXPECT_NE(tolerate.status.message().find("offset 56: truncated record"), std::string::npos)
      << tolerate.status.message();
  EXPECT_NE(tolerate.status.message().find("intact record starts inside it at offset 72"),
            std::string::npos)
      << tolerate.status.message();
  EXPECT_EQ(tolerate.records.size(), 3u);

  auto skip = ReadShard(fs_.get(), bad_, SkipMode());
  ASSERT_TRUE(skip.status.ok()) << skip.status.ToString();
  EXPECT_EQ(skip.records, (std::vector<std::string>{"", "\x01", "ABCDEFG", ""}));
  ASSERT_EQ(skip.skipped.size(), 1u);
  EXPECT_EQ(skip.skipped[0].offset, 56u);
  EXPECT_EQ(skip.skipped[0].length, 16u);
}

TEST_F(RecordCorruption, TruncatedCompressedTail) {
  for (Codec codec : {Codec::kZstd, Codec::kGzip}) {
    auto records = MakeRecords(30, 1, 50);
    std::string good = Write(records, codec, /*zstd_frame_bytes=*/300);
    uint64_t last_frame = index_.frames().back().file_offset;
    size_t earlier_frames = 0;
    while (index_.records()[earlier_frames].frame < index_.frames().size() - 1) ++earlier_frames;
    size_t from = codec == Codec::kZstd ? last_frame + 1 : good.size() - 40;
    for (size_t cut = from; cut < good.size(); ++cut) {
      Put(good.substr(0, cut));
      auto strict = ReadShard(fs_.get(), bad_);
      ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss) << CodecName(codec) << " " << cut;
      EXPECT_NE(strict.status.message().find("truncated"), std::string::npos)
          << strict.status.message();
      for (const auto& options : {TolerateTornTail(), SkipMode()}) {
        auto got = ReadShard(fs_.get(), bad_, options);
        ASSERT_TRUE(got.status.ok()) << cut << ": " << got.status.ToString();
        ASSERT_LE(got.records.size(), records.size());
        EXPECT_GE(got.records.size(), earlier_frames);
        EXPECT_EQ(got.records,
                  std::vector<std::string>(records.begin(), records.begin() + got.records.size()));
        EXPECT_FALSE(got.warnings.empty());
      }
    }
  }
}

TEST_F(RecordCorruption, LengthAboveCap) {
  std::vector<std::string> records = {"small", std::string(1000, 'L'), "after"};
  for (Codec codec : {Codec::kNone, Codec::kZstd}) {
    Write(records, codec);
    RecordReaderOptions o;
    o.max_record_bytes = 100;
    auto strict = ReadShard(fs_.get(), "/good", o);
    ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss);
    EXPECT_NE(strict.status.message().find("offset 21"), std::string::npos)
        << strict.status.message();
    EXPECT_NE(strict.status.message().find("exceeds max_record_bytes 100"), std::string::npos);
    o.policy = CorruptionPolicy::kSkip;
    auto skip = ReadShard(fs_.get(), "/good", o);
    ASSERT_TRUE(skip.status.ok());
    EXPECT_EQ(skip.records, (std::vector<std::string>{"small", "after"}));
  }
}

TEST_F(RecordCorruption, NotATFRecordFile) {
  const std::string text = "This is a text file, not a TFRecord file at all.\nSecond line.\n";
  Put(text);
  auto strict = ReadShard(fs_.get(), bad_);
  ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss);
  EXPECT_NE(strict.status.message().find(bad_ + ": offset 0: length CRC mismatch"),
            std::string::npos)
      << strict.status.message();
  EXPECT_NE(strict.status.message().find("not a TFRecord file?"), std::string::npos);
  auto skip = ReadShard(fs_.get(), bad_, SkipMode());
  ASSERT_TRUE(skip.status.ok());
  EXPECT_TRUE(skip.records.empty());
  ASSERT_EQ(skip.skipped.size(), 1u);
  EXPECT_EQ(skip.skipped[0].offset, 0u);
  EXPECT_EQ(skip.skipped[0].length, text.size());
}

TEST_F(RecordCorruption, EmptyFileHasNoRecords) {
  Put("");
  auto got = ReadShard(fs_.get(), bad_);
  ASSERT_TRUE(got.status.ok());
  EXPECT_TRUE(got.records.empty());
}

// B's header is rewritten (with a valid length CRC) to claim B and C as one record: the
// payload CRC cannot match, and no reader mode may return B+C as one payload.
TEST_F(RecordCorruption, CorruptionNeverJoinsRecords) {
  std::vector<std::string> records = {"A-record", "B-record-payload", "C-record", "D"};
  std::string good = Write(records, Codec::kNone);
  auto offsets = Offsets(records);
  std::string bad = good;
  EncodeRecordHeader(records[1].size() + kRecordOverheadBytes + records[2].size(),
                     &bad[offsets[1]]);
  Put(bad);
  auto strict = ReadShard(fs_.get(), bad_);
  ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss);
  EXPECT_NE(strict.status.message().find("payload CRC mismatch"), std::string::npos);
  auto skip = ReadShard(fs_.get(), bad_, SkipMode());
  ASSERT_TRUE(skip.status.ok());
  EXPECT_EQ(skip.records, (std::vector<std::string>{"A-record", "C-record", "D"}));
  RecordReaderOptions no_crc;
  no_crc.verify_crc = false;  // the one mode that trusts lengths: it must still stay framed
  auto trusting = ReadShard(fs_.get(), bad_, no_crc);
  ASSERT_TRUE(trusting.status.ok());
  ASSERT_EQ(trusting.records.size(), 3u);
  EXPECT_EQ(trusting.records[2], "D");
}

TEST_F(RecordCorruption, ZeroFilledHoleIsSkipped) {
  auto records = MakeRecords(4, 10, 30);
  std::string good = Write(records, Codec::kNone);
  auto offsets = Offsets(records);
  std::string bad = good.substr(0, offsets[2]) + std::string(4096, '\0') + good.substr(offsets[2]);
  Put(bad);
  auto skip = ReadShard(fs_.get(), bad_, SkipMode());
  ASSERT_TRUE(skip.status.ok());
  EXPECT_EQ(skip.records, records);
  ASSERT_EQ(skip.skipped.size(), 1u);
  EXPECT_EQ(skip.skipped[0].offset, offsets[2]);
  EXPECT_EQ(skip.skipped[0].length, 4096u);
}

TEST_F(RecordCorruption, SkippedRangesAreInFileOrder) {
  auto records = MakeRecords(20, 10, 30);
  std::string good = Write(records, Codec::kNone);
  auto offsets = Offsets(records);
  std::string bad = good;
  for (size_t j : {3, 4, 9, 15}) bad[offsets[j] + 14] ^= 1;
  Put(bad);
  auto skip = ReadShard(fs_.get(), bad_, SkipMode());
  ASSERT_TRUE(skip.status.ok());
  EXPECT_EQ(skip.records, Without(records, {3, 4, 9, 15}));
  ASSERT_EQ(skip.skipped.size(), 3u);  // records 3 and 4 form one range
  EXPECT_EQ(skip.skipped[0].offset, offsets[3]);
  EXPECT_EQ(skip.skipped[0].length, offsets[5] - offsets[3]);
  EXPECT_EQ(skip.skipped[1].offset, offsets[9]);
  EXPECT_EQ(skip.skipped[2].offset, offsets[15]);
}

// After damage, resync accepts records longer than the direct-CRC limit through the prefix
// CRC chain, including when they straddle read-buffer refills.
TEST_F(RecordCorruption, ResyncFindsLargeRecordsAfterDamage) {
  auto records = MakeRecords(12, 5000, 90000, 9);
  std::string good = Write(records, Codec::kNone);
  auto offsets = Offsets(records);
  std::string bad = good;
  for (size_t j : {0, 4, 5, 10}) bad[offsets[j] + 12 + records[j].size() / 2] ^= 0x20;
  Put(bad);
  for (size_t buffer : {size_t{4096}, size_t{20000}, size_t{1} << 20}) {
    auto o = SkipMode();
    o.read_buffer_bytes = buffer;
    auto skip = ReadShard(fs_.get(), bad_, o);
    ASSERT_TRUE(skip.status.ok()) << skip.status.ToString();
    EXPECT_EQ(skip.records, Without(records, {0, 4, 5, 10})) << "buffer " << buffer;
    ASSERT_EQ(skip.skipped.size(), 3u);
    EXPECT_EQ(skip.skipped[1].offset, offsets[4]);
    EXPECT_EQ(skip.skipped[1].length, offsets[6] - offsets[4]);
  }
}

// Every 12 bytes a header with a valid length CRC whose (wrong) payload runs to near the end
// of the file: checking each candidate's payload CRC directly would cost O(n^2).
TEST_F(RecordCorruption, AdversarialHeadersDoNotStallResync) {
  const size_t n = 1 << 20;
  std::string bad(n, '\0');
  for (size_t p = 0; p + 12 + 16 <= n - 64; p += 12) {
    EncodeRecordHeader(n - 64 - p - 16, &bad[p]);
  }
  Put(bad);
  auto skip = ReadShard(fs_.get(), bad_, SkipMode());
  ASSERT_TRUE(skip.status.ok());
  EXPECT_TRUE(skip.records.empty());
  ASSERT_EQ(skip.skipped.size(), 1u);
  EXPECT_EQ(skip.skipped[0].length, n);
}

TEST_F(RecordCorruption, GzipCorruptDeflateEndsTheReadableData) {
  auto records = MakeRecords(300, 10, 200);
  std::string good = Write(records, Codec::kGzip);
  for (size_t k : {good.size() / 3, good.size() / 2, good.size() - 10, good.size() - 3}) {
    std::string bad = good;
    bad[k] ^= 0x5A;
    Put(bad);
    auto strict = ReadShard(fs_.get(), bad_);
    ASSERT_EQ(strict.status.code(), StatusCode::kDataLoss) << k;
    auto skip = ReadShard(fs_.get(), bad_, SkipMode());
    ASSERT_TRUE(skip.status.ok()) << skip.status.ToString();
    EXPECT_TRUE(IsSubsequence(skip.records, records)) << k;
    EXPECT_FALSE(skip.skipped.empty()) << k;
  }
}

}  // namespace
}  // namespace sluice::format

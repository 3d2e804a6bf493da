// ShardIndex (serialize, parse, build) and ShardReader (random access through the index).
#include "sluice/format/shard_index.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "format/framing.h"
#include "sluice/base/crc32c.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::MakeRecords;
using testing::WriteShard;

// The framed records of `records` as one uncompressed stream.
std::string FramedStream(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) AppendFramedRecord(r, &out);
  return out;
}

// A zstd file as another tool might write it: frames cut every `cut` bytes of the stream,
// regardless of record boundaries.
std::string ForeignZstd(const std::string& stream, size_t cut) {
  std::string out;
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  for (size_t at = 0; at < stream.size(); at += cut) {
    size_t n = std::min(cut, stream.size() - at);
    std::string frame(ZSTD_compressBound(n), '\0');
    size_t got = ZSTD_compress2(cctx, frame.data(), frame.size(), stream.data() + at, n);
    EXPECT_FALSE(ZSTD_isError(got));
    out.append(frame.data(), got);
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

class ShardReaderTest : public ::testing::TestWithParam<Codec> {
 protected:
  std::string Write(const std::vector<std::string>& records, bool write_index = true) {
    RecordWriterOptions o;
    o.codec = GetParam();
    o.zstd_frame_bytes = 4096;
    o.write_index = write_index;
    std::string path = "/d/shard.tfrecord" + std::string(CodecExtension(GetParam()));
    EXPECT_TRUE(WriteShard(fs_.get(), path, records, o).ok());
    return path;
  }
  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
};

TEST_P(ShardReaderTest, RandomAccessEqualsSequential) {
  auto records = MakeRecords(2000, 0, 300);
  records[700] = std::string(20000, 'b');  // larger than a frame
  std::string path = Write(records);
  auto reader = ShardReader::Open(fs_.get(), path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_EQ((*reader)->num_records(), records.size());
  std::vector<uint64_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  std::string out;
  for (uint64_t i : order) {
    ASSERT_TRUE((*reader)->Read(i, &out).ok()) << i;
    ASSERT_EQ(out, records[i]) << i;
  }
  for (uint64_t i = 0; i < records.size(); ++i) {  // in order: the frame cache path
    ASSERT_TRUE((*reader)->Read(i, &out).ok()) << i;
    ASSERT_EQ(out, records[i]) << i;
  }
}

TEST_P(ShardReaderTest, ConcurrentReadsAreSafe) {
  auto records = MakeRecords(1000, 0, 200);
  std::string path = Write(records);
  auto reader = ShardReader::Open(fs_.get(), path);
  ASSERT_TRUE(reader.ok());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::string out;
      for (int k = 0; k < 2000; ++k) {
        uint64_t i = rng() % records.size();
        if (!(*reader)->Read(i, &out).ok() || out != records[i]) ++failures[t];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST_P(ShardReaderTest, MissingIndexIsBuilt) {
  auto records = MakeRecords(100, 0, 100);
  std::string path = Write(records, /*write_index=*/false);
  auto reader = ShardReader::Open(fs_.get(), path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string out;
  ASSERT_TRUE((*reader)->Read(57, &out).ok());
  EXPECT_EQ(out, records[57]);
  ShardReaderOptions o;
  o.build_missing_index = false;
  EXPECT_EQ(ShardReader::Open(fs_.get(), path, o).status().code(), StatusCode::kNotFound);
}

TEST_P(ShardReaderTest, ReadPastTheEndIsOutOfRange) {
  std::string path = Write({"a", "b"});
  auto reader = ShardReader::Open(fs_.get(), path);
  ASSERT_TRUE(reader.ok());
  std::string out;
  EXPECT_EQ((*reader)->Read(2, &out).code(), StatusCode::kOutOfRange);
}

TEST_P(ShardReaderTest, ChecksumMismatchNamesTheRecord) {
  auto records = MakeRecords(50, 20, 40);
  std::string path = Write(records);
  std::string bytes = *fs_->ReadAll(path);
  auto index = ShardIndex::Load(fs_.get(), path + ".idx");
  ASSERT_TRUE(index.ok());
  // Damage record 20's payload (codec none) or a byte in the middle of the file.
  size_t at = GetParam() == Codec::kNone ? index->frames()[20].file_offset + 15 : bytes.size() / 2;
  bytes[at] ^= 0x40;
  ASSERT_TRUE(fs_->WriteAll(path, bytes).ok());
  auto reader = ShardReader::Open(fs_.get(), path);
  ASSERT_TRUE(reader.ok());
  std::string out;
  if (GetParam() == Codec::kNone) {
    Status s = (*reader)->Read(20, &out);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(
        s.message().find("record 20 at offset " + std::to_string(index->frames()[20].file_offset)),
        std::string::npos)
        << s.message();
    EXPECT_TRUE((*reader)->Read(21, &out).ok());
  } else {
    size_t failed = 0;
    for (uint64_t i = 0; i < records.size(); ++i) {
      Status s = (*reader)->Read(i, &out);
      if (!s.ok()) {
        ++failed;
        EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
      } else {
        EXPECT_EQ(out, records[i]);
      }
    }
    EXPECT_GT(failed, 0u);
  }
}

TEST_P(ShardReaderTest, IndexOfAnotherShardIsRejected) {
  std::string path = Write(MakeRecords(30, 10, 20));
  ASSERT_TRUE(WriteShard(fs_.get(), "/d/other", MakeRecords(31, 10, 20)).ok());
  ASSERT_TRUE(fs_->WriteAll(path + ".idx", *fs_->ReadAll("/d/other.idx")).ok());
  auto reader = ShardReader::Open(fs_.get(), path);
  ASSERT_EQ(reader.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(reader.status().message().find("index does not match shard"), std::string::npos)
      << reader.status().message();
}

TEST_P(ShardReaderTest, CorruptIndexIsRejected) {
  std::string path = Write(MakeRecords(30, 10, 20));
  std::string idx = *fs_->ReadAll(path + ".idx");
  idx[idx.size() / 2] ^= 1;
  ASSERT_TRUE(fs_->WriteAll(path + ".idx", idx).ok());
  auto reader = ShardReader::Open(fs_.get(), path);
  ASSERT_EQ(reader.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(reader.status().message().find(".idx: corrupt index"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Codecs, ShardReaderTest,
                         ::testing::Values(Codec::kNone, Codec::kGzip, Codec::kZstd),
                         [](const auto& info) { return std::string(CodecName(info.param)); });

TEST(ShardIndex, SerializeParseRoundTrip) {
  ShardIndex index(Codec::kZstd, {{0, 100, 300}, {100, 50, 40}, {150, 7, 0}},
                   {{0, 0, 10}, {0, 26, 0}, {0, 200, 84}, {1, 0, 24}});
  std::string bytes = index.Serialize();
  auto parsed = ShardIndex::Parse(bytes, "x.idx");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->codec(), Codec::kZstd);
  ASSERT_EQ(parsed->frames().size(), 3u);
  ASSERT_EQ(parsed->records().size(), 4u);
  EXPECT_EQ(parsed->frames()[1].file_offset, 100u);
  EXPECT_EQ(parsed->frames()[2].file_bytes, 7u);
  EXPECT_EQ(parsed->records()[2].offset_in_frame, 200u);
  EXPECT_EQ(parsed->records()[3].frame, 1u);
  EXPECT_EQ(parsed->records()[3].length, 24u);
  EXPECT_EQ(parsed->Serialize(), bytes);
}

TEST(ShardIndex, EveryFlippedByteIsRejected) {
  ShardIndex index(Codec::kNone, {{0, 20, 20}, {20, 16, 16}}, {{0, 0, 4}, {1, 0, 0}});
  std::string good = index.Serialize();
  for (size_t k = 0; k < good.size(); ++k) {
    std::string bad = good;
    bad[k] ^= 0x01;
    auto parsed = ShardIndex::Parse(bad, "x.idx");
    ASSERT_EQ(parsed.status().code(), StatusCode::kDataLoss) << k;
    EXPECT_EQ(parsed.status().message().rfind("x.idx: corrupt index: ", 0), 0u);
  }
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(ShardIndex::Parse(good.substr(0, n), "x.idx").status().code(), StatusCode::kDataLoss)
        << "truncated to " << n;
  }
}

// An index with a valid CRC but impossible contents (what a buggy writer could produce).
std::string Resealed(std::string body) {
  PutFixed32(&body, crc32c::Mask(crc32c::Value(body)));
  return body;
}

TEST(ShardIndex, InconsistentTablesAreRejected) {
  std::string good = ShardIndex(Codec::kNone, {{0, 20, 20}}, {{0, 0, 4}}).Serialize();
  std::string body = good.substr(0, good.size() - 4);
  auto message = [](const std::string& bytes) {
    return ShardIndex::Parse(bytes, "x.idx").status().message();
  };
  std::string huge_counts = body;
  EncodeFixed64(&huge_counts[24], uint64_t{1} << 60);
  EXPECT_NE(message(Resealed(huge_counts)).find("exceed the index size"), std::string::npos);
  std::string bad_codec = body;
  EncodeFixed32(&bad_codec[12], 7);
  EXPECT_NE(message(Resealed(bad_codec)).find("unknown codec 7"), std::string::npos);
  std::string bad_version = body;
  EncodeFixed32(&bad_version[8], 9);
  EXPECT_NE(message(Resealed(bad_version)).find("unsupported version 9"), std::string::npos);
  // The record claims 5 payload bytes: 21 framed bytes in a 20-byte frame.
  std::string outside = body;
  outside[outside.size() - 1] = 5;
  EXPECT_NE(message(Resealed(outside)).find("record outside its frame"), std::string::npos);
  EXPECT_NE(message(Resealed(body + "x")).find("unexpected bytes"), std::string::npos);
}

TEST(ShardIndex, BuildGroupsForeignZstdFramesSoNoRecordStraddles) {
  auto fs = io::NewMemoryFileSystem();
  auto records = MakeRecords(300, 0, 100);
  std::string stream = FramedStream(records);
  ASSERT_TRUE(fs->WriteAll("/f.zst", ForeignZstd(stream, 1000)).ok());
  auto index = ShardIndex::Build(fs.get(), "/f.zst");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->codec(), Codec::kZstd);
  EXPECT_EQ(index->num_records(), records.size());
  ASSERT_TRUE(index->Save(fs.get(), "/f.zst.idx").ok());
  auto reader = ShardReader::Open(fs.get(), "/f.zst");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string out;
  for (uint64_t i = records.size(); i-- > 0;) {
    ASSERT_TRUE((*reader)->Read(i, &out).ok()) << i;
    ASSERT_EQ(out, records[i]);
  }
}

TEST(ShardIndex, BuildReadsForeignTFRecordFiles) {
  auto fs = io::NewMemoryFileSystem();
  auto records = MakeRecords(50, 0, 100);
  ASSERT_TRUE(fs->WriteAll("/tf.tfrecord", FramedStream(records)).ok());
  auto reader = ShardReader::Open(fs.get(), "/tf.tfrecord");
  ASSERT_TRUE(reader.ok());
  std::string out;
  ASSERT_TRUE((*reader)->Read(49, &out).ok());
  EXPECT_EQ(out, records[49]);
}

TEST(ShardIndex, BuildFailsOnCorruptShard) {
  auto fs = io::NewMemoryFileSystem();
  std::string stream = FramedStream({"one", "two"});
  stream[14] ^= 1;
  ASSERT_TRUE(fs->WriteAll("/x.tfrecord", stream).ok());
  auto index = ShardIndex::Build(fs.get(), "/x.tfrecord");
  EXPECT_EQ(index.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ShardReader::Open(fs.get(), "/x.tfrecord").status().code(), StatusCode::kDataLoss);
}

// Foreign zstd frames cut through records: a damaged frame leaves a gap in the stream, and
// the reader must not join the record piece before the gap with the piece after it.
TEST(ShardIndex, DamagedForeignFrameNeverJoinsRecordsAcrossTheGap) {
  auto fs = io::NewMemoryFileSystem();
  auto records = MakeRecords(200, 0, 80, 5);
  std::string stream = FramedStream(records);
  std::string file = ForeignZstd(stream, 500);
  ASSERT_TRUE(fs->WriteAll("/f.zst", file).ok());
  auto built = ShardIndex::Build(fs.get(), "/f.zst");
  ASSERT_TRUE(built.ok());
  // Find the zstd frames by walking the file, damage the third one.
  std::vector<size_t> starts;
  for (size_t at = 0; at < file.size();) {
    starts.push_back(at);
    at += ZSTD_findFrameCompressedSize(file.data() + at, file.size() - at);
  }
  ASSERT_GT(starts.size(), 4u);
  file[starts[2] + (starts[3] - starts[2]) / 2] ^= 0x10;
  ASSERT_TRUE(fs->WriteAll("/f.zst", file).ok());
  auto got = testing::ReadShard(fs.get(), "/f.zst", testing::SkipMode());
  ASSERT_TRUE(got.status.ok()) << got.status.ToString();
  // Expected: every record that does not touch stream bytes [1000, 1500).
  std::vector<std::string> expected;
  uint64_t at = 0;
  for (const auto& r : records) {
    uint64_t end = at + r.size() + kRecordOverheadBytes;
    if (end <= 1000 || at >= 1500) expected.push_back(r);
    at = end;
  }
  EXPECT_EQ(got.records, expected);
}

}  // namespace
}  // namespace sluice::format

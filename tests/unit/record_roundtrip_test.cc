// Round trips through RecordWriter and RecordReader for every codec, on the in-memory and
// the local file system.
#include <gtest/gtest.h>

#include <tuple>

#include "format/framing.h"
#include "sluice/format/shard_index.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::FileSystemFixture;
using testing::MakeRecords;
using testing::ReadShard;
using testing::WriteShard;

class RecordRoundTrip : public ::testing::TestWithParam<std::tuple<Codec, std::string>> {
 protected:
  RecordRoundTrip() : env_(std::get<1>(GetParam())) {}
  Codec codec() const { return std::get<0>(GetParam()); }
  RecordWriterOptions Options() const {
    RecordWriterOptions o;
    o.codec = codec();
    o.zstd_frame_bytes = 64 << 10;
    return o;
  }
  void ExpectRoundTrip(const std::vector<std::string>& records) {
    std::string path = env_.Path("shard.tfrecord");
    ASSERT_TRUE(WriteShard(env_.fs(), path, records, Options()).ok());
    auto got = ReadShard(env_.fs(), path);
    ASSERT_TRUE(got.status.ok()) << got.status.ToString();
    ASSERT_EQ(got.records.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) ASSERT_EQ(got.records[i], records[i]) << i;
    EXPECT_TRUE(got.skipped.empty());
    EXPECT_TRUE(got.warnings.empty());
    // The index the writer left equals the one built by scanning the shard.
    auto written = ShardIndex::Load(env_.fs(), ShardIndex::IndexPathFor(path));
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    auto built = ShardIndex::Build(env_.fs(), path);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    EXPECT_EQ(written->Serialize(), built->Serialize());
    EXPECT_EQ(written->num_records(), records.size());
  }

  FileSystemFixture env_;
};

TEST_P(RecordRoundTrip, NoRecords) { ExpectRoundTrip({}); }

TEST_P(RecordRoundTrip, EmptyRecords) { ExpectRoundTrip({"", "", ""}); }

TEST_P(RecordRoundTrip, OneByte) { ExpectRoundTrip({"x"}); }

TEST_P(RecordRoundTrip, ManySmall) { ExpectRoundTrip(MakeRecords(5000, 0, 200)); }

TEST_P(RecordRoundTrip, RecordsLargerThanTheFrame) {
  ExpectRoundTrip(MakeRecords(12, 50 << 10, 300 << 10));
}

TEST_P(RecordRoundTrip, FiveMiBRecord) {
  auto records = MakeRecords(3, 10, 100);
  records.insert(records.begin() + 1, MakeRecords(1, 5 << 20, 5 << 20, 7)[0]);
  ExpectRoundTrip(records);
}

TEST_P(RecordRoundTrip, SmallReadBuffer) {
  std::string path = env_.Path("shard.tfrecord");
  auto records = MakeRecords(300, 0, 5000);
  ASSERT_TRUE(WriteShard(env_.fs(), path, records, Options()).ok());
  RecordReaderOptions o;
  o.read_buffer_bytes = 1;  // clamped to a small minimum: many refills, records straddle them
  auto got = ReadShard(env_.fs(), path, o);
  ASSERT_TRUE(got.status.ok()) << got.status.ToString();
  EXPECT_EQ(got.records, records);
}

TEST_P(RecordRoundTrip, ReaderReportsCodecOffsetsAndIndex) {
  std::string path = env_.Path("shard.tfrecord");
  auto records = MakeRecords(10, 1, 100);
  ASSERT_TRUE(WriteShard(env_.fs(), path, records, Options()).ok());
  auto reader = RecordReader::Open(env_.fs(), path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->codec(), codec());
  uint64_t offset = 0;
  ByteView r;
  for (size_t i = 0; i < records.size(); ++i) {
    auto more = (*reader)->Next(&r);
    ASSERT_TRUE(more.ok() && *more);
    EXPECT_EQ((*reader)->record_index(), i);
    EXPECT_EQ((*reader)->record_offset(), offset);
    offset += records[i].size() + kRecordOverheadBytes;
  }
  auto more = (*reader)->Next(&r);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  more = (*reader)->Next(&r);  // stays at the end
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
}

TEST_P(RecordRoundTrip, WriterCountsBytes) {
  auto w = RecordWriter::Open(env_.fs(), env_.Path("s.tfrecord"), Options());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write("hello").ok());
  ASSERT_TRUE((*w)->Write("").ok());
  EXPECT_EQ((*w)->records_written(), 2u);
  EXPECT_EQ((*w)->framed_bytes(), 5u + 2 * kRecordOverheadBytes);
  ASSERT_TRUE((*w)->Close().ok());
  auto info = env_.fs()->Stat(env_.Path("s.tfrecord"));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ((*w)->file_bytes(), info->size);
}

TEST_P(RecordRoundTrip, UnclosedWriterLeavesNoFile) {
  {
    auto w = RecordWriter::Open(env_.fs(), env_.Path("s.tfrecord"), Options());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(std::string(3 << 20, 'a')).ok());
  }
  EXPECT_FALSE(env_.fs()->Exists(env_.Path("s.tfrecord")));
  EXPECT_FALSE(env_.fs()->Exists(env_.Path("s.tfrecord.idx")));
}

TEST_P(RecordRoundTrip, WriteAfterCloseFailsAndSticks) {
  auto w = RecordWriter::Open(env_.fs(), env_.Path("s.tfrecord"), Options());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->Write("late").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*w)->Close().code(), StatusCode::kFailedPrecondition);
}

TEST_P(RecordRoundTrip, NoIndexWhenDisabled) {
  auto o = Options();
  o.write_index = false;
  ASSERT_TRUE(WriteShard(env_.fs(), env_.Path("s.tfrecord"), {"a", "b"}, o).ok());
  EXPECT_TRUE(env_.fs()->Exists(env_.Path("s.tfrecord")));
  EXPECT_FALSE(env_.fs()->Exists(env_.Path("s.tfrecord.idx")));
}

INSTANTIATE_TEST_SUITE_P(Codecs, RecordRoundTrip,
                         ::testing::Combine(::testing::Values(Codec::kNone, Codec::kGzip,
                                                              Codec::kZstd),
                                            ::testing::Values("memory", "local")),
                         [](const auto& info) {
                           return std::string(CodecName(std::get<0>(info.param))) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(RecordWriter, ZstdFramesHoldWholeRecordsUpToTheFrameSize) {
  auto fs = io::NewMemoryFileSystem();
  RecordWriterOptions o;
  o.zstd_frame_bytes = 1000;
  auto records = MakeRecords(200, 0, 300);
  records.push_back(std::string(5000, 'z'));  // larger than a frame: a frame of its own
  records.push_back("after");
  ASSERT_TRUE(testing::WriteShard(fs.get(), "/s.tfrecord.zst", records, o).ok());
  auto index = ShardIndex::Load(fs.get(), "/s.tfrecord.zst.idx");
  ASSERT_TRUE(index.ok());
  ASSERT_GT(index->frames().size(), 10u);
  std::vector<uint64_t> used(index->frames().size(), 0);
  for (const auto& r : index->records()) used[r.frame] += r.length + kRecordOverheadBytes;
  for (size_t f = 0; f < used.size(); ++f) {
    EXPECT_EQ(used[f], index->frames()[f].uncompressed_bytes) << f;
    bool single = std::count_if(index->records().begin(), index->records().end(),
                                [&](const IndexRecord& r) { return r.frame == f; }) == 1;
    if (!single) {
      EXPECT_LE(used[f], 1000u) << f;
    }
  }
}

TEST(RecordWriter, RejectsBadOptions) {
  auto fs = io::NewMemoryFileSystem();
  RecordWriterOptions o;
  o.zstd_level = 1000;
  EXPECT_EQ(RecordWriter::Open(fs.get(), "/a", o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.codec = Codec::kGzip;
  o.gzip_level = 42;
  EXPECT_EQ(RecordWriter::Open(fs.get(), "/a", o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.zstd_frame_bytes = 0;
  EXPECT_EQ(RecordWriter::Open(fs.get(), "/a", o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::format

// Pipelines over bad input and bad arguments (issue 13, items 6, 11 and 12): a damaged shard
// or index is subject to the iterator's on_error policy instead of failing the read; stage
// arguments and options that cannot work are refused with the stage or option named; batch
// and shuffle buffers grow with the data, not with the size asked for; a quarantine file
// that cannot be written fails when the iterator starts.
#include <unistd.h>

#include <algorithm>

#include "pipeline_test_util.h"
#include "sluice/format/record_writer.h"

namespace sluice::pipeline {
namespace {

using testing::Drain;
using testing::IdMap;
using testing::Ids;
using testing::MakeIt;
using testing::ParseId;

// Three uncompressed shards of ids 0..29, 30..59, 60..89 in a memory file system.
class PipelineDamagedShards : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = io::NewMemoryFileSystem();
    for (int s = 0; s < 3; ++s) {
      std::string path = "/d/part-" + std::to_string(s) + ".tfrecord";
      format::RecordWriterOptions o;
      o.codec = format::Codec::kNone;
      auto w = format::RecordWriter::Open(fs_.get(), path, o);
      ASSERT_TRUE(w.ok());
      for (int i = 0; i < 30; ++i) ASSERT_TRUE((*w)->Write(std::to_string(30 * s + i)).ok());
      ASSERT_TRUE((*w)->Close().ok());
      paths_.push_back(path);
    }
  }
  void TruncateFirstShard() {
    std::string bytes = *fs_->ReadAll(paths_[0]);
    ASSERT_TRUE(fs_->WriteAll(paths_[0], bytes.substr(0, bytes.size() - 5)).ok());
  }
  Result<Dataset> Read(std::optional<ErrorPolicy> policy = std::nullopt) {
    ReadOptions ro;
    ro.fs = fs_.get();
    ro.paths = paths_;
    ro.on_error = policy;
    return Dataset::Read(ro);
  }

  std::unique_ptr<io::FileSystem> fs_;
  std::vector<std::string> paths_;
};

TEST_F(PipelineDamagedShards, TruncatedShardKeepsEveryIntactRecordUnderSkip) {
  TruncateFirstShard();
  for (auto read_policy :
       {std::optional<ErrorPolicy>(ErrorPolicy::kSkip), std::optional<ErrorPolicy>()}) {
    auto ds = Read(read_policy);
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    EXPECT_EQ(ds->shard_records(), (std::vector<uint64_t>{29, 30, 30}));
    PipelineOptions o;
    o.threads = 2;
    o.on_error = ErrorPolicy::kSkip;
    auto it = MakeIt(ds->Map(ParseId, IdMap()), o);
    ASSERT_NE(it, nullptr);
    std::vector<int64_t> got = Drain(it.get());
    std::vector<int64_t> want;
    for (int64_t i = 0; i < 90; ++i) {
      if (i != 29) want.push_back(i);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(it->stats().stages[0].skipped, 1u) << "the record the index listed beyond the cut";
  }
}

TEST_F(PipelineDamagedShards, TruncatedShardFailsWhenTheIteratorStartsUnderRaise) {
  TruncateFirstShard();
  auto strict = Read(ErrorPolicy::kRaise);
  ASSERT_EQ(strict.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(strict.status().message().find("index does not match shard /d/part-0.tfrecord"),
            std::string::npos)
      << strict.status().ToString();
  auto ds = Read();
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto it = ds->MakeIterator();
  ASSERT_EQ(it.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(it.status().message().find("read: shard '/d/part-0.tfrecord' is damaged"),
            std::string::npos)
      << it.status().ToString();
  EXPECT_NE(it.status().message().find("29 intact records"), std::string::npos);
}

TEST_F(PipelineDamagedShards, QuarantineNamesTheDamagedShard) {
  std::string idx = *fs_->ReadAll(paths_[1] + ".idx");
  idx[idx.size() / 2] ^= 1;
  ASSERT_TRUE(fs_->WriteAll(paths_[1] + ".idx", idx).ok());
  auto ds = Read();
  ASSERT_TRUE(ds.ok());
  PipelineOptions o;
  o.on_error = ErrorPolicy::kQuarantine;
  o.quarantine_fs = fs_.get();
  o.quarantine_path = "/q.tsv";
  {
    auto it = MakeIt(ds->Map(ParseId, IdMap()), o);
    ASSERT_NE(it, nullptr);
    EXPECT_EQ(Drain(it.get()).size(), 90u) << "a corrupt index loses no record";
    EXPECT_EQ(it->stats().stages[0].quarantined, 1u);
  }
  std::string q = *fs_->ReadAll("/q.tsv");
  EXPECT_EQ(q.rfind("/d/part-1.tfrecord\t-\tread\t", 0), 0u) << q;
  EXPECT_NE(q.find("corrupt index"), std::string::npos) << q;
}

TEST(PipelineQuarantine, UnwritableQuarantineFileFailsBeforeAnyRecord) {
  const std::string missing = "/tmp/sluice-no-such-dir-" + std::to_string(::getpid()) + "/q.tsv";
  int calls = 0;
  auto counting = [&calls](Element* e, const MapContext& ctx) -> Status {
    ++calls;
    return ParseId(e, ctx);
  };
  MapOptions mo = IdMap(0);
  mo.on_error = ErrorPolicy::kQuarantine;
  PipelineOptions o;
  o.quarantine_path = missing;  // on the local file system
  auto it = Ids({10}).Map(counting, mo).MakeIterator(o);
  ASSERT_FALSE(it.ok());
  EXPECT_NE(it.status().message().find("cannot write the quarantine file " + missing),
            std::string::npos)
      << it.status().ToString();
  o.quarantine_path = "";
  it = Ids({10}).Map(counting, mo).MakeIterator(o);
  ASSERT_EQ(it.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(it.status().message().find("quarantine_path"), std::string::npos);
  EXPECT_EQ(calls, 0);
}

TEST(PipelineArguments, OptionsThatCannotWorkAreRefused) {
  PipelineOptions o;
  o.memory_budget_bytes = 0;
  auto it = Ids({5}).MakeIterator(o);
  ASSERT_EQ(it.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(it.status().message().find("memory_budget_bytes must be > 0"), std::string::npos);
  o = PipelineOptions();
  o.threads = 100000;
  it = Ids({5}).MakeIterator(o);
  ASSERT_EQ(it.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(it.status().message().find("threads = 100000"), std::string::npos);
}

TEST(PipelineArguments, BatchLargerThanTheDataIsOneBatch) {
  for (size_t n : {size_t{1} << 40, size_t{1} << 62}) {
    auto it = MakeIt(Ids({3, 4}).Map(ParseId, IdMap()).Batch(n), 2);
    ASSERT_NE(it, nullptr);
    std::vector<size_t> sizes;
    std::vector<int64_t> got = Drain(it.get(), SIZE_MAX, &sizes);
    EXPECT_EQ(sizes, std::vector<size_t>{7});
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
    auto dropped = MakeIt(Ids({3, 4}).Map(ParseId, IdMap()).Batch(n, true), 2);
    EXPECT_TRUE(Drain(dropped.get()).empty());
  }
}

TEST(PipelineArguments, BufferShuffleOfSizeZeroIsRefused) {
  ShuffleOptions buffer;
  buffer.mode = ShuffleMode::kBuffer;
  buffer.buffer_size = 0;
  Dataset zero = Ids({5}).Shuffle(buffer);
  ASSERT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("shuffle: buffer_size must be >= 1"), std::string::npos);
  buffer.seed = 3;
  buffer.buffer_size = size_t{1} << 40;
  Dataset huge = Ids({5, 5}).Shuffle(buffer);
  auto it = MakeIt(huge.Map(ParseId, IdMap()), 2);
  ASSERT_NE(it, nullptr);
  std::vector<int64_t> got = Drain(it.get());
  std::vector<int64_t> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_NE(got, sorted) << "a buffer holding everything shuffles everything";
}

}  // namespace
}  // namespace sluice::pipeline

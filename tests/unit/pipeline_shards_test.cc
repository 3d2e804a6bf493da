// The read stage over real shard files (RecordWriter output in every codec): the global order
// visits every record once, restores work, and a damaged record is reported with the shard's
// path and byte offset, or skipped.
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "pipeline_test_util.h"
#include "publish_test_util.h"
#include "sluice/format/record_writer.h"
#include "sluice/format/shard_writer.h"

namespace sluice::pipeline {
namespace {

using testing::Drain;
using testing::IdMap;
using testing::MakeIt;
using testing::ParseId;
using testing::StreamError;

class PipelineShards : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = io::NewMemoryFileSystem();
    ASSERT_TRUE(fs_->CreateDirs("/data").ok());
    int64_t id = 0;
    format::Codec codecs[] = {format::Codec::kNone, format::Codec::kZstd, format::Codec::kGzip,
                              format::Codec::kZstd};
    for (int s = 0; s < 4; ++s) {
      format::RecordWriterOptions o;
      o.codec = codecs[s];
      o.zstd_frame_bytes = 64;  // several frames per shard
      std::string path = "/data/part-" + std::to_string(s) + ".tfrecord";
      auto w = format::RecordWriter::Open(fs_.get(), path, o);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      for (int i = 0; i < 25 + 10 * s; ++i) ASSERT_TRUE((*w)->Write(std::to_string(id++)).ok());
      ASSERT_TRUE((*w)->Close().ok());
      paths_.push_back(path);
    }
    total_ = id;
  }

  Dataset Open(std::optional<ErrorPolicy> policy = std::nullopt) {
    auto source = OpenShardSource(fs_.get(), paths_);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    ReadOptions ro;
    ro.on_error = policy;
    return Dataset::FromSource(*source, ro);
  }

  std::unique_ptr<io::FileSystem> fs_;
  std::vector<std::string> paths_;
  int64_t total_ = 0;
};

TEST_F(PipelineShards, GlobalOrderVisitsEveryRecordOfEveryCodecOnce) {
  auto it = MakeIt(Open().Shuffle({.seed = 4}).Map(ParseId, IdMap(2)).Batch(16).Prefetch(2), 2);
  std::vector<int64_t> got = Drain(it.get());
  ASSERT_EQ(static_cast<int64_t>(got.size()), total_);
  EXPECT_FALSE(std::is_sorted(got.begin(), got.end()));
  std::sort(got.begin(), got.end());
  for (int64_t i = 0; i < total_; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], i);
}

TEST_F(PipelineShards, BlockModeRestoresMidEpoch) {
  auto build = [&] {
    return Open().Shuffle({ShuffleMode::kBlock, 2, 2, 0}).Map(ParseId, IdMap(2)).Batch(7);
  };
  auto full = MakeIt(build(), 2);
  std::vector<int64_t> all = Drain(full.get());
  auto it = MakeIt(build(), 2);
  std::vector<int64_t> head = Drain(it.get(), 5);
  std::string state = *it->Save();
  auto resumed = MakeIt(build(), 1);
  ASSERT_TRUE(resumed->Restore(state).ok());
  std::vector<int64_t> tail = Drain(resumed.get());
  head.insert(head.end(), tail.begin(), tail.end());
  EXPECT_EQ(head, all);
}

// Flips a payload byte of record 3 of the uncompressed shard.
void Corrupt(io::FileSystem* fs, const std::string& path) {
  std::string data = *fs->ReadAll(path);
  size_t offset = 0;
  for (int r = 0; r < 3; ++r) offset += DecodeFixed64(data.data() + offset) + 16;
  data[offset + 12] ^= 0x20;
  ASSERT_TRUE(fs->WriteAll(path, data).ok());
}

TEST_F(PipelineShards, DamagedRecordIsReportedWithPathAndOffset) {
  Corrupt(fs_.get(), paths_[0]);
  auto it = MakeIt(Open().Map(ParseId, IdMap(2)), 2);
  std::vector<int64_t> got;
  Status s = StreamError(it.get(),
                         [&](const Element& e) { got.push_back(*e.tensors[0].data<int64_t>()); });
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("/data/part-0.tfrecord: record 3 at offset"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("payload CRC mismatch"), std::string::npos);
}

TEST_F(PipelineShards, DamagedRecordIsSkippedUnderSkipPolicy) {
  Corrupt(fs_.get(), paths_[0]);
  auto it = MakeIt(Open(ErrorPolicy::kSkip).Map(ParseId, IdMap(2)), 2);
  std::vector<int64_t> got = Drain(it.get());
  EXPECT_EQ(static_cast<int64_t>(got.size()), total_ - 1);
  EXPECT_EQ(std::count(got.begin(), got.end(), 3), 0);
  EXPECT_EQ(it->stats().stages[0].skipped, 1u);
}

TEST_F(PipelineShards, MissingShardFailsToOpen) {
  paths_.push_back("/data/nope.tfrecord");
  auto source = OpenShardSource(fs_.get(), paths_);
  EXPECT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("nope.tfrecord"), std::string::npos);
}

// Looks remote ("s3"); each open waits (up to 2 s, once) for another open to be in flight,
// so a source that opens shards one by one shows no overlap.
class OverlapProbe final : public format::testing::ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  std::string_view name() const override { return "s3"; }
  Result<std::unique_ptr<io::RandomAccessFile>> OpenForRead(const std::string& p) override {
    {
      std::unique_lock<std::mutex> l(mu_);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
      cv_.notify_all();
      if (!gave_up_ && !cv_.wait_for(l, std::chrono::seconds(2),
                                     [&] { return in_flight_ > 1 || overlapped_; })) {
        gave_up_ = true;
      }
      overlapped_ = overlapped_ || in_flight_ > 1;
    }
    auto r = ForwardingFileSystem::OpenForRead(p);
    std::lock_guard<std::mutex> l(mu_);
    --in_flight_;
    return r;
  }
  int max_in_flight() {
    std::lock_guard<std::mutex> l(mu_);
    return max_in_flight_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0, max_in_flight_ = 0;  // guarded by mu_
  bool overlapped_ = false, gave_up_ = false;
};

TEST_F(PipelineShards, RemoteShardsAreOpenedInParallelAndReadAsLocalOnes) {
  OverlapProbe remote(fs_.get());
  auto source = OpenShardSource(&remote, paths_);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_GE(remote.max_in_flight(), 2);
  auto it = MakeIt(Dataset::FromSource(*source).Map(ParseId, IdMap(2)).Batch(16), 2);
  std::vector<int64_t> got = Drain(it.get());
  ASSERT_EQ(static_cast<int64_t>(got.size()), total_);
  for (int64_t i = 0; i < total_; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], i);
}

TEST_F(PipelineShards, OfRemoteShardsOpenedInParallelTheFirstMissingOneIsNamed) {
  OverlapProbe remote(fs_.get());
  paths_.insert(paths_.begin() + 1, "/data/missing-1.tfrecord");
  paths_.push_back("/data/missing-2.tfrecord");
  auto source = OpenShardSource(&remote, paths_);
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("missing-1.tfrecord"), std::string::npos)
      << source.status().ToString();
}

TEST(PipelineReadPaths, ReadsADatasetDirectoryAndAGlob) {
  auto fs = io::NewMemoryFileSystem();
  format::ShardWriterOptions o;
  o.target_shard_bytes = 300;  // several shards
  auto w = format::ShardWriter::Open(fs.get(), "/ds", o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < 200; ++i) ASSERT_TRUE((*w)->Write(std::to_string(i)).ok());
  ASSERT_TRUE((*w)->Close().ok());
  ASSERT_GT((*w)->manifest().shards.size(), 2u);

  ReadOptions ro;
  ro.fs = fs.get();
  ro.paths = {"/ds"};
  Result<Dataset> dir = Dataset::Read(ro);
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  auto it = MakeIt(dir->Shuffle({.seed = 1}).Map(ParseId, IdMap()), 2);
  std::vector<int64_t> got = Drain(it.get());
  std::sort(got.begin(), got.end());
  ASSERT_EQ(got.size(), 200u);
  EXPECT_EQ(got.back(), 199);

  ro.paths = {"/ds/data-*-0000[01].tfrecord.zst"};
  Result<Dataset> glob = Dataset::Read(ro);
  ASSERT_TRUE(glob.ok()) << glob.status().ToString();
  auto two = MakeIt(*glob, 1);
  EXPECT_LT(Drain(two.get()).size(), 200u);

  ro.paths = {"/nowhere"};
  Result<Dataset> missing = Dataset::Read(ro);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nowhere"), std::string::npos);
}

// A manifest that disagrees with its shards (edited, or a shard replaced after publication)
// is refused when the dataset is opened, naming both numbers, not noticed only by verify.
// A shard that disagrees with its manifest: read(on_error = raise) fails the open; a read
// that sets no policy leaves it to the iterator's (raise fails at its start, naming the
// manifest entry; skip reads what the shard holds).
TEST(PipelineReadPaths, ShardDisagreeingWithItsManifestFailsUnderRaise) {
  auto fs = io::NewMemoryFileSystem();
  auto w = format::ShardWriter::Open(fs.get(), "/ds", {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*w)->Write(std::to_string(i)).ok());
  ASSERT_TRUE((*w)->Close().ok());
  format::Manifest m = (*w)->manifest();
  m.shards[0].records = 12;  // total_records follows: the manifest itself is consistent
  ASSERT_TRUE(fs->Delete("/ds/dataset.json").ok());
  ASSERT_TRUE(m.Save(fs.get(), "/ds").ok());
  const std::string expected = "/ds/dataset.json: shards[0] " + m.shards[0].path +
                               ": the manifest says 12 records, the shard holds 10";

  ReadOptions ro;
  ro.fs = fs.get();
  ro.paths = {"/ds"};
  ro.on_error = ErrorPolicy::kRaise;
  Result<Dataset> refused = Dataset::Read(ro);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find(expected), std::string::npos)
      << refused.status().ToString();

  ro.on_error.reset();  // the iterator's policy decides, at its start
  Result<Dataset> deferred = Dataset::Read(ro);
  ASSERT_TRUE(deferred.ok()) << deferred.status().ToString();
  auto started = deferred->Map(ParseId, IdMap()).MakeIterator({});
  Status start = started.ok() ? StreamError(started->get()) : started.status();
  EXPECT_EQ(start.code(), StatusCode::kDataLoss) << start.ToString();
  EXPECT_NE(start.message().find(expected), std::string::npos) << start.ToString();

  ro.on_error = ErrorPolicy::kSkip;  // read what the shard holds
  Result<Dataset> skipping = Dataset::Read(ro);
  ASSERT_TRUE(skipping.ok()) << skipping.status().ToString();
  auto it = MakeIt(skipping->Map(ParseId, IdMap()), 1);
  EXPECT_EQ(Drain(it.get()).size(), 10u);
}

}  // namespace
}  // namespace sluice::pipeline

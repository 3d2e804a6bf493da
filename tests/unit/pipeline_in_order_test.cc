// Unshuffled reads (shuffle modes none and buffer) of shard files go through the read stage's
// chunk cache in stored order (ChunkOrder::InOrder): every record once and in order, each
// chunk fetched and decoded once (on local files by the thread that decodes it), exact
// save/restore, ranks striped as before; and the in-order chunk order itself.
#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

#include "pipeline_test_util.h"
#include "sluice/base/thread_pool.h"
#include "sluice/format/record_writer.h"
#include "sluice/pipeline/chunk_order.h"
#include "sluice/pipeline/chunk_plan.h"

namespace sluice::pipeline {
namespace {

using testing::CountingSource;
using testing::Drain;
using testing::IdMap;
using testing::MakeIt;
using testing::ParseId;

TEST(ChunkOrderInOrder, PositionIsTheRecordChunkAfterChunk) {
  auto starts = std::make_shared<std::vector<uint64_t>>(std::vector<uint64_t>{0, 3, 4, 11, 30});
  ChunkOrder order(starts, ChunkOrder::InOrder{});
  ASSERT_EQ(order.size(), 30u);
  EXPECT_TRUE(order.in_order());
  ChunkOrder::Placer placer(order);
  for (uint64_t p = 0; p < order.size(); ++p) {
    const uint64_t chunk = p < 3 ? 0 : p < 4 ? 1 : p < 11 ? 2 : 3;
    EXPECT_EQ(order.At(p).record, p);
    EXPECT_EQ(order.At(p).chunk, chunk) << p;
    EXPECT_EQ(placer.At(p).record, p);
    EXPECT_EQ(placer.At(p).chunk, chunk);
    EXPECT_EQ(order.WindowAt(p).end_slot - order.WindowAt(p).first_slot, 1u);
  }
  // The unshuffled GlobalOrder given the chunks keeps position = record.
  GlobalOrder none({30}, OrderOptions{ShuffleMode::kNone, 1, 4, 0, 0}, 3, starts);
  ASSERT_NE(none.chunk_order(), nullptr);
  for (uint64_t p = 0; p < 30; ++p) EXPECT_EQ(none.RecordAt(p), p);
}

class PipelineInOrder : public ::testing::TestWithParam<format::Codec> {
 protected:
  void SetUp() override {
    fs_ = io::NewMemoryFileSystem();
    ASSERT_TRUE(fs_->CreateDirs("/d").ok());
    int64_t id = 0;
    for (int count : {300, 0, 410, 255, 199}) {
      format::RecordWriterOptions o;
      o.codec = GetParam();
      o.zstd_frame_bytes = 256;
      std::string path = "/d/part-" + std::to_string(paths_.size()) + ".tfrecord";
      auto w = format::RecordWriter::Open(fs_.get(), path, o);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      for (int i = 0; i < count; ++i) ASSERT_TRUE((*w)->Write(std::to_string(id++)).ok());
      ASSERT_TRUE((*w)->Close().ok());
      paths_.push_back(path);
    }
    total_ = id;
  }

  std::shared_ptr<CountingSource> Source() {
    format::ShardReaderOptions options;
    options.chunk_bytes = 256;  // ~25 records a chunk
    auto source = OpenShardSource(fs_.get(), paths_, options);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    return std::make_shared<CountingSource>(*source);
  }

  // read [-> shuffle(mode)] -> shard -> parse id -> batch 8.
  static Dataset Pipeline(std::shared_ptr<RecordSource> source, ShuffleMode mode,
                          uint32_t rank = 0, uint32_t world = 1) {
    ReadOptions ro;
    ro.chunk_records = 16;
    Dataset ds = Dataset::FromSource(std::move(source), ro);
    if (mode != ShuffleMode::kNone) {
      ShuffleOptions shuffle{.mode = mode, .seed = 4};
      shuffle.buffer_size = 50;
      ds = ds.Shuffle(shuffle);
    }
    return ds.Shard(rank, world).Map(ParseId, IdMap(2)).Batch(8);
  }

  static PipelineOptions Options(uint32_t threads) {
    PipelineOptions o;
    o.threads = threads;
    o.autotune = false;
    o.memory_budget_bytes = 64ull << 20;
    return o;
  }

  std::unique_ptr<io::FileSystem> fs_;
  std::vector<std::string> paths_;
  int64_t total_ = 0;
};

INSTANTIATE_TEST_SUITE_P(Codecs, PipelineInOrder, testing::AllCodecs(), testing::CodecTestName);

TEST_P(PipelineInOrder, UnshuffledRecordsComeInStoredOrderEachChunkDecodedOnce) {
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  for (uint32_t threads : {1u, 2u, 8u}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    auto counted = Source();
    auto it = MakeIt(Pipeline(counted, ShuffleMode::kNone), Options(threads));
    std::vector<int64_t> all(static_cast<size_t>(total_));
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(Drain(it.get()), all);
    EXPECT_EQ(counted->TotalDecodes(), (*chunks)->size());
    EXPECT_EQ(it->stats().stages[0].chunk_decodes, (*chunks)->size());
  }
}

TEST_P(PipelineInOrder, RanksGetTheirStripeAndBufferModeEveryRecord) {
  for (uint32_t rank = 0; rank < 3; ++rank) {
    auto it = MakeIt(Pipeline(Source(), ShuffleMode::kNone, rank, 3), Options(2));
    std::vector<int64_t> got = Drain(it.get());
    ASSERT_EQ(got.size(), static_cast<size_t>(total_ / 3));  // drop: the remainder goes
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int64_t>(3 * i + rank));
  }
  auto it = MakeIt(Pipeline(Source(), ShuffleMode::kBuffer), Options(2));
  std::vector<int64_t> got = Drain(it.get());
  EXPECT_FALSE(std::is_sorted(got.begin(), got.end()));
  std::sort(got.begin(), got.end());
  std::vector<int64_t> all(static_cast<size_t>(total_));
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(got, all);
}

TEST_P(PipelineInOrder, RestoreAnywhereContinuesTheStream) {
  auto full = MakeIt(Pipeline(Source(), ShuffleMode::kNone), Options(2));
  const std::vector<int64_t> expect = Drain(full.get());
  for (size_t at : {size_t{0}, size_t{1}, size_t{37}, expect.size() / 8}) {
    SCOPED_TRACE(::testing::Message() << "save after " << at << " batches");
    auto it = MakeIt(Pipeline(Source(), ShuffleMode::kNone), Options(2));
    std::vector<int64_t> head = at == 0 ? std::vector<int64_t>() : Drain(it.get(), at);
    Result<std::string> state = it->Save();
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    auto resumed = MakeIt(Pipeline(Source(), ShuffleMode::kNone), Options(1));
    ASSERT_TRUE(resumed->Restore(*state).ok());
    std::vector<int64_t> tail = Drain(resumed.get());
    head.insert(head.end(), tail.begin(), tail.end());
    EXPECT_EQ(head, expect);
  }
}

// A source that asks for adjacent chunks to be fetched together (as remote shard files do),
// records each group, and can fail them.
class GroupingSource final : public ForwardingSource {
 public:
  GroupingSource(std::shared_ptr<RecordSource> inner, uint64_t group_bytes, Status fail = {})
      : ForwardingSource(std::move(inner)), group_bytes_(group_bytes), fail_(std::move(fail)) {}
  uint64_t fetch_group_bytes() const override { return group_bytes_; }
  void FetchChunk(uint32_t shard, const format::ShardChunk& chunk, io::ReadCallback done,
                  const io::IoContext& context) const override {
    {
      std::lock_guard<std::mutex> l(mu_);
      groups_.push_back({shard, {chunk}});
    }
    ForwardingSource::FetchChunk(shard, chunk, std::move(done), context);
  }
  void FetchChunks(uint32_t shard, const std::vector<format::ShardChunk>& chunks,
                   io::RangesCallback done, const io::IoContext& context) const override {
    {
      std::lock_guard<std::mutex> l(mu_);
      groups_.push_back({shard, chunks});
    }
    if (!fail_.ok()) {
      io::IoExecutor()->Submit([done = std::move(done), fail = fail_] { done(fail); });
      return;
    }
    ForwardingSource::FetchChunks(shard, chunks, std::move(done), context);
  }
  std::vector<std::pair<uint32_t, std::vector<format::ShardChunk>>> groups() const {
    std::lock_guard<std::mutex> l(mu_);
    return groups_;
  }

 private:
  const uint64_t group_bytes_;
  const Status fail_;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<uint32_t, std::vector<format::ShardChunk>>> groups_;
};

TEST_P(PipelineInOrder, AdjacentChunksOfAShardAreFetchedTogether) {
  if (GetParam() == format::Codec::kGzip) {
    GTEST_SKIP() << "a gzip shard written here is one chunk: nothing adjacent to group";
  }
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  constexpr uint64_t kGroupBytes = 1000;  // a few chunks of ~256 bytes (less when compressed)
  for (uint32_t threads : {1u, 2u}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    auto counted = Source();
    auto grouping = std::make_shared<GroupingSource>(counted, kGroupBytes);
    auto it = MakeIt(Pipeline(grouping, ShuffleMode::kNone), Options(threads));
    std::vector<int64_t> all(static_cast<size_t>(total_));
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(Drain(it.get()), all);
    EXPECT_EQ(counted->TotalDecodes(), (*chunks)->size());
    size_t fetched = 0, largest = 0;
    for (const auto& [shard, group] : grouping->groups()) {
      fetched += group.size();
      largest = std::max(largest, group.size());
      uint64_t bytes = 0;
      for (size_t i = 0; i < group.size(); ++i) {
        bytes += group[i].file_bytes;
        if (i > 0) {
          EXPECT_EQ(group[i].file_offset, group[i - 1].file_offset + group[i - 1].file_bytes)
              << "shard " << shard << ": a group is a run of adjacent chunks";
        }
      }
      if (group.size() > 1) {
        EXPECT_LE(bytes, kGroupBytes);
      }
    }
    EXPECT_EQ(fetched, (*chunks)->size()) << "every chunk fetched once";
    EXPECT_GE(largest, 2u) << "adjacent chunks were grouped";
  }
}

TEST_P(PipelineInOrder, ShardsOnAFileSystemThatDoesNotMergeRangesAreFetchedChunkByChunk) {
  EXPECT_FALSE(fs_->merges_ranges());
  EXPECT_EQ(Source()->fetch_group_bytes(), 0u);  // tests/python/test_s3_faults.py: S3 groups
}

// A source whose read-ahead is set (local shard files: 32 MiB; here a few chunks).
class ReadAheadSource final : public ForwardingSource {
 public:
  ReadAheadSource(std::shared_ptr<RecordSource> inner, uint64_t bytes)
      : ForwardingSource(std::move(inner)), bytes_(bytes) {}
  uint64_t read_ahead_bytes() const override { return bytes_; }

 private:
  const uint64_t bytes_;
};

// The cache admits the chunks of samples not pulled yet up to the source's read-ahead, not up
// to its capacity: a consumer that stops after one batch leaves a few chunks decoded, not the
// dataset (which fits the cache, and is what a read-ahead of 0, remote storage's, decodes).
// read -> batch 8 (no map: its window would pull hundreds of records ahead).
TEST_P(PipelineInOrder, AnUnshuffledReadDecodesAheadOnlyItsReadAhead) {
  auto chunks = SnapshotChunks::Of(*Source());
  ASSERT_TRUE(chunks.ok());
  const uint64_t total_chunks = (*chunks)->size();
  if (total_chunks < 20) GTEST_SKIP() << "one chunk per gzip shard: too few to tell";
  for (const uint64_t read_ahead : {uint64_t{0}, uint64_t{300}}) {
    SCOPED_TRACE(::testing::Message() << "read-ahead " << read_ahead << " bytes");
    auto counted = Source();
    ReadOptions ro;
    ro.chunk_records = 16;
    auto it = MakeIt(
        Dataset::FromSource(std::make_shared<ReadAheadSource>(counted, read_ahead), ro).Batch(8),
        Options(2));
    Element e;
    ASSERT_TRUE(it->Next(&e).ok());
    // Pulled so far: the batch and the read's tasks ahead of it (<= 8 + 4 x 16 records, ~3
    // chunks of ~25); ahead of them ~1-2 chunks of ~256 decoded bytes (one more if it
    // overshoots). Given time, a read-ahead of 0 decodes every chunk.
    uint64_t decoded = 0;
    for (int wait = 0; wait < (read_ahead == 0 ? 250 : 10); ++wait) {  // <= 5 s, 0.2 s
      decoded = counted->TotalDecodes();
      if (decoded == total_chunks) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (read_ahead == 0) {
      EXPECT_EQ(decoded, total_chunks);
    } else {
      EXPECT_LE(decoded, 8u) << "of " << total_chunks;
    }
    size_t batches = 1;
    for (Result<bool> more = it->Next(&e); more.ok() && *more; more = it->Next(&e)) ++batches;
    EXPECT_EQ(batches, static_cast<size_t>((total_ + 7) / 8));
    EXPECT_EQ(counted->TotalDecodes(), total_chunks) << "each chunk decoded once";
  }
}

TEST_P(PipelineInOrder, ShardFilesOnLocalDiskReadAheadABoundedAmount) {
  EXPECT_EQ(Source()->read_ahead_bytes(), uint64_t{32} << 20);  // the memory file system's too
}

TEST_P(PipelineInOrder, GroupedFetchesKeepAShuffledOrderExactly) {
  auto plain = MakeIt(Pipeline(Source(), ShuffleMode::kGlobal), Options(2));
  const std::vector<int64_t> expect = Drain(plain.get());
  auto grouping = std::make_shared<GroupingSource>(Source(), 1000);
  auto it = MakeIt(Pipeline(grouping, ShuffleMode::kGlobal), Options(2));
  EXPECT_EQ(Drain(it.get()), expect);
}

TEST_P(PipelineInOrder, AFailedGroupFetchFailsTheReadWithItsError) {
  if (GetParam() == format::Codec::kGzip) GTEST_SKIP() << "one chunk per gzip shard: no groups";
  auto grouping = std::make_shared<GroupingSource>(
      Source(), 1000, DataLoss("s3://b/d/part-0.tfrecord: bytes 0-999: injected"));
  auto it = MakeIt(Pipeline(grouping, ShuffleMode::kNone), Options(2));
  Element e;
  Status failed;
  for (int n = 0; n < 10000 && failed.ok(); ++n) {
    Result<bool> more = it->Next(&e);
    if (!more.ok()) {
      failed = more.status();
    } else if (!*more) {
      break;
    }
  }
  EXPECT_EQ(failed.code(), StatusCode::kDataLoss) << failed.ToString();
  EXPECT_NE(failed.message().find("bytes 0-999: injected"), std::string::npos)
      << failed.ToString();
}

// Counts a source's fetches: FetchChunk (through an I/O thread) and FetchChunkNow (on the
// decoding thread); `now` overrides fetches_now(); `fail` fails the FetchChunkNow of the
// chunk starting at record 0 of shard 0.
class FetchCountingSource final : public ForwardingSource {
 public:
  FetchCountingSource(std::shared_ptr<RecordSource> inner, bool now, Status fail = Status::OK())
      : ForwardingSource(std::move(inner)), now_(now), fail_(std::move(fail)) {}
  bool fetches_now() const override { return now_; }
  void FetchChunk(uint32_t shard, const format::ShardChunk& chunk, io::ReadCallback done,
                  const io::IoContext& context) const override {
    ++later_;
    ForwardingSource::FetchChunk(shard, chunk, std::move(done), context);
  }
  Result<std::string> FetchChunkNow(uint32_t shard, const format::ShardChunk& chunk,
                                    std::string buffer) const override {
    ++now_fetches_;
    if (!fail_.ok() && shard == 0 && chunk.first_record == 0) return fail_;
    return ForwardingSource::FetchChunkNow(shard, chunk, std::move(buffer));
  }
  uint64_t later() const { return later_; }
  uint64_t now_fetches() const { return now_fetches_; }

 private:
  const bool now_;
  const Status fail_;
  mutable std::atomic<uint64_t> later_{0}, now_fetches_{0};
};

// Shards on local files: each compressed chunk is read by the thread about to decode it (no
// I/O thread to wake and none waking it back), once per chunk, and the stream is the one a
// source fetching through FetchChunk gives; a failed read fails the stream with its error.
// An uncompressed chunk (nothing to decode: the fetch is all its work) goes through
// FetchChunk.
TEST_P(PipelineInOrder, LocalChunksAreFetchedByTheirDecode) {
  const bool compressed = GetParam() != format::Codec::kNone;
  auto chunks = SnapshotChunks::Of(*Source());
  ASSERT_TRUE(chunks.ok());
  EXPECT_TRUE(Source()->fetches_now());
  for (uint32_t threads : {1u, 2u}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    std::vector<int64_t> streams[2];
    for (bool now : {true, false}) {
      auto counted = std::make_shared<FetchCountingSource>(Source(), now);
      auto it = MakeIt(Pipeline(counted, ShuffleMode::kNone), Options(threads));
      streams[now] = Drain(it.get());
      EXPECT_EQ(streams[now].size(), static_cast<size_t>(total_));
      const bool by_decode = now && compressed;
      EXPECT_EQ(by_decode ? counted->now_fetches() : counted->later(), (*chunks)->size());
      EXPECT_EQ(by_decode ? counted->later() : counted->now_fetches(), 0u);
    }
    EXPECT_EQ(streams[true], streams[false]);
  }
  if (!compressed) return;
  auto failing = std::make_shared<FetchCountingSource>(
      Source(), true, DataLoss("/d/part-0.tfrecord: injected read error"));
  auto it = MakeIt(Pipeline(failing, ShuffleMode::kNone), Options(2));
  Status failed = testing::StreamError(it.get());
  EXPECT_EQ(failed.code(), StatusCode::kDataLoss) << failed.ToString();
  EXPECT_NE(failed.message().find("injected read error"), std::string::npos) << failed.ToString();
}

}  // namespace
}  // namespace sluice::pipeline

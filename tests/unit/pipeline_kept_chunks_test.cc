// Decoded chunks kept between the iterators of one read (ReadOptions::keep_decoded_chunks,
// kept_chunks.h): the next epoch, a restore or a repeat starts with the chunks the last
// iterator decoded instead of decoding them again, with the same stream as without; nothing
// is kept when the dataset does not fit the cache or the option is off; kept chunks are
// charged to the iterator that holds them and to none between iterators; iterators running
// at once over one read each read every record.
#include <algorithm>
#include <thread>

#include "pipeline_test_util.h"
#include "sluice/format/record_writer.h"
#include "sluice/pipeline/chunk_plan.h"

namespace sluice::pipeline {
namespace {

using testing::CountingSource;
using testing::Drain;
using testing::IdMap;
using testing::MakeIt;
using testing::ParseId;

class PipelineKeptChunks : public ::testing::TestWithParam<format::Codec> {
 protected:
  void SetUp() override {
    fs_ = io::NewMemoryFileSystem();
    ASSERT_TRUE(fs_->CreateDirs("/d").ok());
    int64_t id = 0;
    for (int s = 0; s < 4; ++s) {
      format::RecordWriterOptions o;
      o.codec = GetParam();
      o.zstd_frame_bytes = 256;
      std::string path = "/d/part-" + std::to_string(s) + ".tfrecord";
      auto w = format::RecordWriter::Open(fs_.get(), path, o);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      for (int i = 0; i < 250; ++i) ASSERT_TRUE((*w)->Write(std::to_string(id++)).ok());
      ASSERT_TRUE((*w)->Close().ok());
      paths_.push_back(path);
    }
    total_ = id;
    source_ = Source();
    auto chunks = SnapshotChunks::Of(*source_);
    ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
    chunks_ = (*chunks)->size();
    decoded_bytes_ = (*chunks)->decoded_bytes();
    ASSERT_GE(chunks_, GetParam() == format::Codec::kGzip ? 4u : 20u);
  }

  // Chunks of up to 256 decoded bytes (gzip: one per shard).
  std::shared_ptr<CountingSource> Source() {
    format::ShardReaderOptions options;
    options.chunk_bytes = 256;
    auto source = OpenShardSource(fs_.get(), paths_, options);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    return std::make_shared<CountingSource>(*source);
  }

  // read -> shuffle (default mode) -> parse id -> batch 8.
  static Dataset Pipeline(std::shared_ptr<RecordSource> source, bool keep = true,
                          int64_t epochs = 1) {
    ReadOptions ro;
    ro.chunk_records = 16;
    ro.keep_decoded_chunks = keep;
    return Dataset::FromSource(std::move(source), ro)
        .Shuffle({.seed = 3})
        .Map(ParseId, IdMap(2))
        .Repeat(epochs)
        .Batch(8);
  }

  static PipelineOptions Options(uint64_t epoch = 0, uint64_t budget = 64ull << 20) {
    PipelineOptions o;
    o.threads = 2;
    o.autotune = false;
    o.memory_budget_bytes = budget;
    o.epoch = epoch;
    return o;
  }

  // Epoch `epoch`'s stream from a read of its own that keeps nothing (the budget sizes the
  // order's window).
  std::vector<int64_t> Expected(uint64_t epoch, uint64_t budget = 64ull << 20) {
    auto it = MakeIt(Pipeline(Source(), /*keep=*/false), Options(epoch, budget));
    return Drain(it.get());
  }

  std::unique_ptr<io::FileSystem> fs_;
  std::vector<std::string> paths_;
  int64_t total_ = 0;
  std::shared_ptr<CountingSource> source_;
  uint64_t chunks_ = 0;
  uint64_t decoded_bytes_ = 0;
};

INSTANTIATE_TEST_SUITE_P(Codecs, PipelineKeptChunks, testing::AllCodecs(), testing::CodecTestName);

TEST_P(PipelineKeptChunks, NextEpochStartsWithTheChunksTheLastOneDecoded) {
  const Dataset ds = Pipeline(source_);
  for (uint64_t epoch : {0u, 1u, 2u}) {
    SCOPED_TRACE(::testing::Message() << "epoch " << epoch);
    auto it = MakeIt(ds, Options(epoch));
    EXPECT_EQ(Drain(it.get()), Expected(epoch));
    const PipelineStats stats = it->stats();
    EXPECT_EQ(stats.stages[0].chunk_decodes, epoch == 0 ? chunks_ : 0u);
    EXPECT_EQ(stats.stages[0].chunk_kept, epoch == 0 ? 0u : chunks_);
    // At the end the chunks went to the read (the next iterator may start before this one
    // goes): none stays charged to this pipeline.
    EXPECT_LT(stats.memory_used_bytes, decoded_bytes_ / 4) << stats.memory_used_bytes;
  }
  EXPECT_EQ(source_->TotalDecodes(), chunks_);
}

TEST_P(PipelineKeptChunks, KeptChunksAreChargedToTheIteratorHoldingThem) {
  const Dataset ds = Pipeline(source_);
  Drain(MakeIt(ds, Options(0)).get());
  auto it = MakeIt(ds, Options(1));
  EXPECT_FALSE(Drain(it.get(), 1).empty());
  EXPECT_GE(it->stats().memory_used_bytes, decoded_bytes_);
}

TEST_P(PipelineKeptChunks, ReadThatKeepsNothingDecodesEveryEpoch) {
  const Dataset ds = Pipeline(source_, /*keep=*/false);
  for (uint64_t epoch : {0u, 1u}) {
    auto it = MakeIt(ds, Options(epoch));
    EXPECT_EQ(Drain(it.get()).size(), static_cast<size_t>(total_));
    EXPECT_EQ(it->stats().stages[0].chunk_decodes, chunks_);
    EXPECT_EQ(it->stats().stages[0].chunk_kept, 0u);
  }
  EXPECT_EQ(source_->TotalDecodes(), 2 * chunks_);
}

// A dataset whose decoded chunks exceed the cache (half the budget) keeps none: the next
// epoch would need other chunks first, and the kept ones would hold memory for nothing.
TEST_P(PipelineKeptChunks, DatasetLargerThanTheCacheKeepsNothing) {
  const uint64_t budget = decoded_bytes_;  // cache: half of it
  const Dataset ds = Pipeline(source_);
  for (uint64_t epoch : {0u, 1u}) {
    auto it = MakeIt(ds, Options(epoch, budget));
    std::vector<int64_t> got = Drain(it.get());
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got.size(), static_cast<size_t>(total_));
    for (int64_t i = 0; i < total_; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], i);
    EXPECT_EQ(it->stats().stages[0].chunk_kept, 0u);
    EXPECT_GE(it->stats().stages[0].chunk_decodes, chunks_);
  }
}

// A dataset whose decoded bytes just fit the cache is kept whole: the kept bytes are counted
// as the read decides, in decoded bytes (a chunk's record table and its buffer's spare
// capacity come on top). Its default window is smaller than the dataset (the cache keeps room
// to decode ahead), so the first pass keeps nothing and the second keeps every chunk.
TEST_P(PipelineKeptChunks, DatasetThatJustFitsTheCacheIsKeptWhole) {
  const uint64_t budget = 2 * decoded_bytes_;  // cache: exactly the decoded bytes
  const Dataset ds = Pipeline(source_);
  Drain(MakeIt(ds, Options(0, budget)).get());
  Drain(MakeIt(ds, Options(1, budget)).get());
  auto it = MakeIt(ds, Options(2, budget));
  EXPECT_EQ(Drain(it.get()), Expected(2, budget));
  EXPECT_EQ(it->stats().stages[0].chunk_kept, chunks_);
  EXPECT_EQ(it->stats().stages[0].chunk_decodes, 0u);
}

// Repeat makes a read stage per epoch in one iterator: the epochs after the first start
// with the chunks of the one before.
TEST_P(PipelineKeptChunks, RepeatDecodesEachChunkOnce) {
  auto it = MakeIt(Pipeline(source_, /*keep=*/true, /*epochs=*/3), Options(0));
  std::vector<int64_t> want = Expected(0);
  for (uint64_t epoch : {1u, 2u}) {
    std::vector<int64_t> next = Expected(epoch);
    want.insert(want.end(), next.begin(), next.end());
  }
  const uint64_t before = source_->TotalDecodes();
  EXPECT_EQ(Drain(it.get()), want);
  EXPECT_EQ(source_->TotalDecodes() - before, chunks_);
}

// A state saved in the middle, restored into a new iterator of the same read (the chunks the
// first one decoded are kept when it goes, even mid-epoch): the rest of the stream exactly.
TEST_P(PipelineKeptChunks, RestoreStartsWithTheKeptChunksAndContinuesExactly) {
  const Dataset ds = Pipeline(source_);
  const std::vector<int64_t> all = Expected(0);
  std::string state;
  size_t taken = 0;
  {
    auto it = MakeIt(ds, Options(0));
    std::vector<size_t> sizes;
    taken = Drain(it.get(), 40, &sizes).size();
    ASSERT_LT(taken, all.size());
    auto saved = it->Save();
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    state = *saved;
  }
  auto resumed = MakeIt(ds, Options(0));
  ASSERT_TRUE(resumed->Restore(state).ok());
  EXPECT_EQ(Drain(resumed.get()), std::vector<int64_t>(all.begin() + taken, all.end()));
  const PipelineStats stats = resumed->stats();
  EXPECT_GT(stats.stages[0].chunk_kept, 0u);
  EXPECT_LE(stats.stages[0].chunk_kept, chunks_);
  // Every charge of the chunks handed over twice (at the restore and at the end) released
  // once: an unbalanced release would wrap the count around.
  EXPECT_LT(stats.memory_used_bytes, decoded_bytes_ / 4) << stats.memory_used_bytes;
}

// Iterators of one read running at once: one of them starts with the kept chunks (if any),
// the other decodes its own; each reads every record of its epoch, and the next iterator
// finds each chunk kept once.
TEST_P(PipelineKeptChunks, IteratorsRunningAtOnceEachReadTheirEpoch) {
  const Dataset ds = Pipeline(source_);
  Drain(MakeIt(ds, Options(0)).get());
  std::vector<int64_t> got[2];
  std::thread other([&] {
    auto it = MakeIt(ds, Options(1));
    got[1] = Drain(it.get());
  });
  {
    auto it = MakeIt(ds, Options(2));
    got[0] = Drain(it.get());
  }
  other.join();
  EXPECT_EQ(got[0], Expected(2));
  EXPECT_EQ(got[1], Expected(1));
  auto it = MakeIt(ds, Options(3));
  EXPECT_EQ(Drain(it.get()), Expected(3));
  EXPECT_EQ(it->stats().stages[0].chunk_kept, chunks_);
  EXPECT_EQ(it->stats().stages[0].chunk_decodes, 0u);
}

// A read whose order does not hold every chunk at once (no shuffle, or a window of two
// chunks) recycles a few chunks' buffers in its first pass and keeps nothing then (keeping
// would take memory a single pass never touches); it keeps from its second pass on.
TEST_P(PipelineKeptChunks, ReadWhoseWindowIsNotTheDatasetKeepsFromItsSecondPass) {
  for (const bool shuffled : {false, true}) {
    SCOPED_TRACE(shuffled ? "a window of 2 chunks" : "no shuffle");
    const auto pipeline = [&](std::shared_ptr<RecordSource> source, bool keep) {
      ReadOptions ro;
      ro.chunk_records = 16;
      ro.keep_decoded_chunks = keep;
      Dataset d = Dataset::FromSource(std::move(source), ro);
      if (shuffled) d = d.Shuffle({.seed = 3, .window_chunks = 2});
      return d.Map(ParseId, IdMap(2)).Batch(8);
    };
    auto counted = Source();
    const Dataset ds = pipeline(counted, /*keep=*/true);
    for (uint64_t epoch : {0u, 1u, 2u}) {
      SCOPED_TRACE(::testing::Message() << "epoch " << epoch);
      auto it = MakeIt(ds, Options(epoch));
      EXPECT_EQ(Drain(it.get()), Drain(MakeIt(pipeline(Source(), false), Options(epoch)).get()));
      const StageStats read = it->stats().stages[0];  // a copy: stats() is a temporary
      EXPECT_EQ(read.chunk_kept, epoch == 2 ? chunks_ : 0u);
      EXPECT_EQ(read.chunk_decodes, epoch == 2 ? 0u : chunks_);
    }
    EXPECT_EQ(counted->TotalDecodes(), 2 * chunks_);
  }
}

// Each read keeps its own chunks: another read of the same files starts cold.
TEST_P(PipelineKeptChunks, AnotherReadOfTheSameFilesKeepsItsOwn) {
  Drain(MakeIt(Pipeline(source_), Options(0)).get());
  auto it = MakeIt(Pipeline(Source()), Options(1));
  EXPECT_EQ(Drain(it.get()), Expected(1));
  EXPECT_EQ(it->stats().stages[0].chunk_kept, 0u);
  EXPECT_EQ(it->stats().stages[0].chunk_decodes, chunks_);
}

}  // namespace
}  // namespace sluice::pipeline

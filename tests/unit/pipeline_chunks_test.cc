// The default shuffle (chunks mode) over real shard files in every codec: each chunk decoded
// at most once per window, every record once per epoch, a new order each epoch, exact
// save/restore at the breakpoints, elastic restores, determinism across threads and prefetch,
// memory within the budget when the window is larger than the budget, ranks that decode
// disjoint chunks, and the snapshot identity.
#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include "pipeline/forwarding_source.h"
#include "pipeline/state.h"
#include "pipeline_test_util.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/record_writer.h"
#include "sluice/pipeline/chunk_plan.h"

namespace sluice::pipeline {
namespace {

using testing::CountingSource;
using testing::Drain;
using testing::IdMap;
using testing::MakeIt;
using testing::ParseId;
using testing::StreamError;

// Shards of decimal ids ("0", "1", ...) in `codec`, 64-byte zstd frames: many chunks.
class PipelineChunks : public ::testing::TestWithParam<format::Codec> {
 protected:
  void SetUp() override { Write(GetParam(), {300, 0, 410, 255, 199}); }

  void Write(format::Codec codec, const std::vector<int>& counts, const std::string& dir = "/d",
             const std::string& prefix = "") {
    if (!fs_) fs_ = io::NewMemoryFileSystem();
    ASSERT_TRUE(fs_->CreateDirs(dir).ok());
    std::vector<std::string>& paths = paths_[dir];
    int64_t id = 0;
    for (size_t s = 0; s < counts.size(); ++s) {
      format::RecordWriterOptions o;
      o.codec = codec;
      o.zstd_frame_bytes = 256;
      std::string path = dir + "/part-" + std::to_string(s) + ".tfrecord";
      auto w = format::RecordWriter::Open(fs_.get(), path, o);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      for (int i = 0; i < counts[s]; ++i) {
        ASSERT_TRUE((*w)->Write(prefix + std::to_string(id++)).ok());
      }
      ASSERT_TRUE((*w)->Close().ok());
      paths.push_back(path);
    }
    total_ = id;
  }

  // Chunks of up to 256 decoded bytes: ~25 records each, ~50 chunks (gzip: one per shard).
  std::shared_ptr<CountingSource> Source(const std::string& dir = "/d") {
    format::ShardReaderOptions options;
    options.chunk_bytes = 256;
    auto source = OpenShardSource(fs_.get(), paths_[dir], options);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    return std::make_shared<CountingSource>(*source);
  }

  // read -> shuffle (default mode) -> shard -> parse id -> batch 8.
  Dataset Pipeline(std::shared_ptr<RecordSource> source, ShuffleOptions shuffle = {.seed = 3},
                   uint32_t rank = 0, uint32_t world = 1, int64_t epochs = 1) {
    ReadOptions ro;
    ro.chunk_records = 16;
    return Dataset::FromSource(std::move(source), ro)
        .Shuffle(shuffle)
        .Shard(rank, world)
        .Map(ParseId, IdMap(2))
        .Repeat(epochs)
        .Batch(8);
  }

  static PipelineOptions Options(uint32_t threads, uint64_t budget = 64ull << 20) {
    PipelineOptions o;
    o.threads = threads;
    o.autotune = false;
    o.memory_budget_bytes = budget;
    return o;
  }

  std::unique_ptr<io::FileSystem> fs_;
  std::map<std::string, std::vector<std::string>> paths_;
  int64_t total_ = 0;
};

INSTANTIATE_TEST_SUITE_P(Codecs, PipelineChunks, testing::AllCodecs(), testing::CodecTestName);

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_P(PipelineChunks, RecordMissedOrRepeatedOrSameOrderNextEpoch) {
  auto it = MakeIt(Pipeline(Source(), {.seed = 3}, 0, 1, 2), Options(2));
  std::vector<int64_t> got = Drain(it.get());
  ASSERT_EQ(got.size(), 2 * static_cast<size_t>(total_));
  std::vector<int64_t> first(got.begin(), got.begin() + total_);
  std::vector<int64_t> second(got.begin() + total_, got.end());
  EXPECT_FALSE(std::is_sorted(first.begin(), first.end()));
  EXPECT_NE(first, second);
  std::vector<int64_t> all(static_cast<size_t>(total_));
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(Sorted(first), all);
  EXPECT_EQ(Sorted(second), all);
}

// With a window of 6 chunks (3 lanes x 2) and a cache that holds them all, no chunk is
// decoded more often than windows need it (a chunk cut by a lane boundary is in two).
TEST_P(PipelineChunks, ChunkDecodedMoreThanOncePerWindow) {
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  ShuffleOptions shuffle{.seed = 5};
  shuffle.window_chunks = 6;
  shuffle.lanes = 3;
  auto it = MakeIt(Pipeline(source, shuffle), Options(2));
  EXPECT_EQ(Drain(it.get()).size(), static_cast<size_t>(total_));
  auto decodes = source->TakeDecodes();
  GlobalOrder order(source->shard_records(), OrderOptions{ShuffleMode::kChunks, 5, 4, 3, 2}, 0,
                    (*chunks)->starts());
  std::map<uint64_t, std::set<std::pair<uint32_t, uint64_t>>> windows;  // chunk -> windows
  for (uint64_t p = 0; p < order.size(); ++p) {
    const ChunkOrder::Window w = order.chunk_order()->WindowAt(p);
    windows[order.chunk_order()->At(p).chunk].insert({w.lane, w.index});
  }
  ASSERT_EQ(windows.size(), (*chunks)->size());
  for (const auto& [chunk, in] : windows) {
    const uint32_t shard = (*chunks)->ShardOf(chunk);
    const int n = decodes[{shard, (*chunks)->Info(chunk).first_record}];
    EXPECT_GE(n, 1);
    EXPECT_LE(n, static_cast<int>(in.size())) << "chunk " << chunk;
  }
  EXPECT_EQ(it->stats().stages[0].chunk_evictions, 0u);
}

// Readers keep the chunks they hold from one read task to the next: over a window of all
// ~50 chunks, tasks of 16 records take about each chunk once per reader, not most of their
// chunks again per task (~14 takes per 16 records).
TEST_P(PipelineChunks, ReadersTakeEachChunkOncePerWindowNotOncePerTask) {
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  for (uint32_t threads : {1u, 2u}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    ShuffleOptions shuffle{.seed = 7};
    shuffle.lanes = 1;
    auto it = MakeIt(Pipeline(source, shuffle), Options(threads));
    std::vector<int64_t> got = Drain(it.get());
    std::vector<int64_t> all(static_cast<size_t>(total_));
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(Sorted(got), all);
    const PipelineStats stats = it->stats();
    EXPECT_EQ(stats.stages[0].chunk_decodes, (*chunks)->size());
    // Readers: at most two per thread (the consumer helps); each takes a chunk once.
    EXPECT_LE(stats.stages[0].chunk_takes, 2 * (threads + 1) * (*chunks)->size());
    EXPECT_GE(stats.stages[0].chunk_takes, (*chunks)->size());
    // At the end the readers hold nothing more: no decoded chunk stays charged.
    EXPECT_LT(stats.memory_used_bytes, (*chunks)->decoded_bytes() / 4) << stats.memory_used_bytes;
  }
}

// Four ranks of one epoch, each its own pipeline: with W dividing the lanes they decode
// disjoint chunks, except the few cut by lane boundaries.
TEST_P(PipelineChunks, RanksDecodeTheSameChunks) {
  auto probe = Source();
  auto chunks = SnapshotChunks::Of(*probe);
  ASSERT_TRUE(chunks.ok());
  const uint64_t n_chunks = (*chunks)->size();
  uint64_t decodes = 0;
  std::vector<int64_t> all;
  for (uint32_t rank = 0; rank < 4; ++rank) {
    auto source = Source();
    ShuffleOptions shuffle{.seed = 9};
    shuffle.lanes = 8;
    auto it = MakeIt(Pipeline(source, shuffle, rank, 4), Options(2));
    std::vector<int64_t> got = Drain(it.get());
    all.insert(all.end(), got.begin(), got.end());
    decodes += source->TotalDecodes();
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(total_ / 4 * 4));
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), all.size());
  EXPECT_LE(decodes, n_chunks + 7) << n_chunks << " chunks";
}

// Save at a breakpoint, restore into a fresh pipeline (other thread count), run to the end:
// the concatenation equals the uninterrupted stream (two epochs under repeat).
TEST_P(PipelineChunks, RestoreAtBreakpointDiffersFromTheUninterruptedStream) {
  ShuffleOptions shuffle{.seed = 7};
  shuffle.window_chunks = 4;
  shuffle.lanes = 2;
  auto build = [&] { return Pipeline(Source(), shuffle, 0, 1, 2); };
  auto full = MakeIt(build(), Options(2));
  std::vector<int64_t> expect = Drain(full.get());
  const size_t batches = (expect.size() + 7) / 8;
  // Window boundaries (in batches) of epoch 0, lane 0 of the order.
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  GlobalOrder order(source->shard_records(), OrderOptions{ShuffleMode::kChunks, 7, 4, 2, 2}, 0,
                    (*chunks)->starts());
  const ChunkOrder::Window second = order.chunk_order()->LaneWindow(0, 1);
  const size_t boundary = static_cast<size_t>(second.first * 2 / 8);
  const size_t epoch_end = static_cast<size_t>(total_ / 8);
  for (size_t at : {size_t{0}, size_t{3}, boundary, epoch_end, epoch_end + 1, batches}) {
    SCOPED_TRACE(::testing::Message() << "save after " << at << " batches");
    auto it = MakeIt(build(), Options(2));
    std::vector<int64_t> head = at == 0 ? std::vector<int64_t>() : Drain(it.get(), at);
    Result<std::string> state = it->Save();
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    EXPECT_LE(state->size(), 4096u);
    auto resumed = MakeIt(build(), Options(1));
    ASSERT_TRUE(resumed->Restore(*state).ok());
    std::vector<int64_t> tail = Drain(resumed.get());
    head.insert(head.end(), tail.begin(), tail.end());
    EXPECT_EQ(head, expect);
  }
}

TEST_P(PipelineChunks, SameSeedOtherStreamForOtherThreadsOrPrefetch) {
  auto build = [&](int64_t prefetch) {
    ShuffleOptions shuffle{.seed = 2};
    shuffle.window_chunks = 5;
    return Dataset::FromSource(Source())
        .Shuffle(shuffle)
        .Map(ParseId, IdMap(kAutotune))
        .Repeat(2)
        .Batch(8)
        .Prefetch(prefetch);
  };
  PipelineOptions reference_options = Options(1);
  auto reference = MakeIt(build(0), reference_options);
  std::vector<int64_t> expect = Drain(reference.get());
  ASSERT_EQ(expect.size(), 2 * static_cast<size_t>(total_));
  for (uint32_t threads : {1u, 2u, 8u}) {
    for (int64_t prefetch : {0, 1, 8}) {
      PipelineOptions o = Options(threads);
      o.autotune = true;
      auto it = MakeIt(build(prefetch), o);
      EXPECT_EQ(Drain(it.get()), expect) << threads << " threads, prefetch " << prefetch;
    }
  }
}

// A window four times the budget: the cache evicts and decodes again rather than grow.
// SnapshotChunks::Locate (the read stage's O(1) placement of a chunk's record) agrees with
// the order's search over the shards for every record, an empty shard among them.
TEST_P(PipelineChunks, ChunkLocateAgreesWithTheShardSearch) {
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  const GlobalOrder order(source->shard_records(), OrderOptions{}, 0);
  const std::vector<uint64_t>& starts = *(*chunks)->starts();
  ASSERT_GE((*chunks)->size(), 4u);  // a chunk or more per non-empty shard
  for (uint64_t c = 0; c < (*chunks)->size(); ++c) {
    for (uint64_t id = starts[c]; id < starts[c + 1]; ++id) {
      const RecordLocation want = order.Locate(id), got = (*chunks)->Locate(c, id);
      ASSERT_EQ(got.shard, want.shard) << "record " << id;
      ASSERT_EQ(got.index, want.index) << "record " << id;
      ASSERT_EQ((*chunks)->ShardOf(c), want.shard) << "chunk " << c;
    }
  }
}

// The default window under a small budget (8 lanes of windows of a few chunks, ending all
// through the epoch): the readers, kept between tasks, hold chunks of windows the cache has
// let go only until they run again, so memory stays within the budget as before.
TEST_P(PipelineChunks, DefaultWindowUnderASmallBudgetStaysInIt) {
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  uint64_t largest = 0;
  for (uint64_t c = 0; c < (*chunks)->size(); ++c) {
    largest = std::max(largest, (*chunks)->Info(c).decoded_bytes);
  }
  const uint64_t budget = 16 * 1024;  // the cache admits 8 KiB of decoded chunks
  for (uint32_t threads : {1u, 2u, 4u}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    ReadOptions ro;
    ro.chunk_records = 4;
    auto ds = Dataset::FromSource(source, ro).Shuffle({.seed = 2}).Map(ParseId, IdMap(1));
    auto it = MakeIt(ds, Options(threads, budget));
    std::vector<int64_t> got = Drain(it.get());
    std::vector<int64_t> all(static_cast<size_t>(total_));
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(Sorted(got), all);
    PipelineStats stats = it->stats();
    EXPECT_LE(stats.memory_peak_bytes, budget + 4 * largest) << "largest chunk " << largest;
  }
}

TEST_P(PipelineChunks, LargerWindowThanTheBudgetGrowsMemory) {
  auto source = Source();
  auto chunks = SnapshotChunks::Of(*source);
  ASSERT_TRUE(chunks.ok());
  const uint64_t budget = 16 * 1024;  // the cache admits 8 KiB of decoded chunks
  ShuffleOptions shuffle{.seed = 1};
  shuffle.window_bytes = 4 * budget;
  ReadOptions ro;
  ro.chunk_records = 4;
  auto ds = Dataset::FromSource(source, ro).Shuffle(shuffle).Map(ParseId, IdMap(1));
  auto it = MakeIt(ds, Options(2, budget));
  std::vector<int64_t> got = Drain(it.get());
  std::vector<int64_t> all(static_cast<size_t>(total_));
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(Sorted(got), all);
  PipelineStats stats = it->stats();
  EXPECT_GT(stats.stages[0].chunk_evictions, 0u);
  // The budget holds everything but what stages may overshoot by (one chunk per stage and
  // the chunks readers hold while copying: a few decoded chunks of at most ~1 KiB here).
  const uint64_t largest = [&] {
    uint64_t m = 0;
    for (uint64_t c = 0; c < (*chunks)->size(); ++c) {
      m = std::max(m, (*chunks)->Info(c).decoded_bytes);
    }
    return m;
  }();
  EXPECT_LE(stats.memory_peak_bytes, budget + 4 * largest) << "largest chunk " << largest;
}

std::vector<int64_t> RunRanks(const std::function<Dataset(uint32_t, uint32_t)>& build,
                              uint32_t world, std::vector<std::string>* states, size_t batches) {
  std::vector<int64_t> out;
  std::vector<std::string> saved;
  for (uint32_t rank = 0; rank < world; ++rank) {
    auto it = MakeIt(build(rank, world), 2);
    if (!states->empty()) {
      Status restored = it->Restore((*states)[0]);
      EXPECT_TRUE(restored.ok()) << restored.ToString();
    }
    std::vector<int64_t> got = Drain(it.get(), batches);
    out.insert(out.end(), got.begin(), got.end());
    saved.push_back(*it->Save());
  }
  *states = saved;
  return out;
}

// 4 ranks save after 3 batches each; 3 ranks (or 2, then 5) continue to the end of the epoch:
// every record once, only the last phase's remainder (< its world size) missing.
TEST_P(PipelineChunks, ElasticRestoreMissesOrRepeatsRecords) {
  auto build = [&](uint32_t rank, uint32_t world) {
    ShuffleOptions shuffle{.seed = 4};
    shuffle.lanes = 4;
    shuffle.window_chunks = 8;
    return Dataset::FromSource(Source())
        .Shuffle(shuffle)
        .Shard(rank, world)
        .Map(ParseId, IdMap(2))
        .Batch(4);
  };
  for (const std::vector<uint32_t>& worlds :
       {std::vector<uint32_t>{4, 3}, std::vector<uint32_t>{4, 2, 5}}) {
    std::vector<std::string> states;
    std::vector<int64_t> seen;
    for (size_t phase = 0; phase < worlds.size(); ++phase) {
      const bool last = phase + 1 == worlds.size();
      std::vector<int64_t> got = RunRanks(build, worlds[phase], &states, last ? SIZE_MAX : 3);
      seen.insert(seen.end(), got.begin(), got.end());
    }
    std::set<int64_t> unique(seen.begin(), seen.end());
    EXPECT_EQ(unique.size(), seen.size()) << "a record repeated";
    EXPECT_GT(seen.size(), static_cast<size_t>(total_ - worlds.back()));
    EXPECT_LE(seen.size(), static_cast<size_t>(total_));
  }
}

// Flips one byte in the middle of shard 2's file: a zstd frame fails its checksum, a gzip
// stream fails to inflate, an uncompressed record fails its payload CRC.
void Damage(io::FileSystem* fs, const std::string& path) {
  std::string data = *fs->ReadAll(path);
  data[data.size() / 2] ^= 0x55;
  ASSERT_TRUE(fs->WriteAll(path, data).ok());
}

TEST_P(PipelineChunks, DamagedChunkErrorNamesShardAndOffset) {
  Damage(fs_.get(), paths_["/d"][2]);
  auto it = MakeIt(Pipeline(Source()), Options(2));
  Status s = StreamError(it.get());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("/d/part-2.tfrecord"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset"), std::string::npos) << s.ToString();
}

// Under skip, only the records of what is damaged are lost: one record (none), the damaged
// frame's chunk (zstd), the rest of the stream from the damage on (gzip: one chunk, the
// shard, cannot be decoded past the damage; its records all fail).
TEST_P(PipelineChunks, DamagedChunkUnderSkipLosesOnlyItsRecords) {
  Damage(fs_.get(), paths_["/d"][2]);
  ReadOptions ro;
  ro.on_error = ErrorPolicy::kSkip;
  auto ds = Dataset::FromSource(Source(), ro).Shuffle({.seed = 3}).Map(ParseId, IdMap(2));
  auto it = MakeIt(ds, Options(2));
  std::vector<int64_t> got = Drain(it.get());
  const uint64_t skipped = it->stats().stages[0].skipped;
  EXPECT_EQ(got.size() + skipped, static_cast<size_t>(total_));
  EXPECT_GE(skipped, 1u);
  const uint64_t shard2 = 410;  // every lost record comes from the damaged shard
  if (GetParam() == format::Codec::kNone) {
    EXPECT_EQ(skipped, 1u);
  }
  if (GetParam() == format::Codec::kZstd) {
    EXPECT_LE(skipped, 40u);  // one 256-byte frame
  }
  EXPECT_LE(skipped, shard2);
  std::set<int64_t> seen(got.begin(), got.end());
  for (int64_t id = 0; id < total_; ++id) {
    if (id < 300 || id >= 300 + static_cast<int64_t>(shard2)) {
      EXPECT_TRUE(seen.count(id)) << "record " << id << " of an undamaged shard lost";
    }
  }
}

// Issue 13 #5: a state from another dataset whose shards have the same names and record
// counts (other content) is refused, naming both snapshots.
TEST_P(PipelineChunks, StateOfAnotherDatasetWithEqualCountsIsRefused) {
  Write(GetParam(), {300, 0, 410, 255, 199}, "/other", /*prefix=*/"x");
  auto a = MakeIt(Pipeline(Source("/d")), Options(2));
  Drain(a.get(), 3);
  std::string state = *a->Save();
  auto b = MakeIt(Pipeline(Source("/other")), Options(2));
  ASSERT_EQ(Dataset::FromSource(Source("/other")).shard_records(),
            Dataset::FromSource(Source("/d")).shard_records());
  Status s = b->Restore(state);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("under /d "), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("under /other "), std::string::npos) << s.ToString();
}

TEST_P(PipelineChunks, SameDatasetCopiedElsewhereIsRefused) {
  Write(GetParam(), {300, 0, 410, 255, 199}, "/copy");
  auto a = MakeIt(Pipeline(Source("/d")), Options(2));
  std::vector<int64_t> head = Drain(a.get(), 3);
  auto b = MakeIt(Pipeline(Source("/copy")), Options(2));
  Status s = b->Restore(*a->Save());
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// A state written before the content identity (version 1: a fingerprint of the record
// counts) of a global-mode pipeline still restores, and continues exactly.
TEST_P(PipelineChunks, Version1GlobalStateIsRefused) {
  auto build = [&] {
    return Pipeline(Source(), ShuffleOptions{.mode = ShuffleMode::kGlobal, .seed = 3});
  };
  auto full = MakeIt(build(), Options(2));
  std::vector<int64_t> expect = Drain(full.get());
  auto it = MakeIt(build(), Options(2));
  std::vector<int64_t> head = Drain(it.get(), 5);
  auto parsed = StateReader::Parse(*it->Save());
  ASSERT_TRUE(parsed.ok());
  StateWriter w = parsed->ToWriter();
  w.Erase("0.read", "snapshot");
  w.Erase("0.read", "snapshot_name");
  GlobalOrder counts(Source()->shard_records(), OrderOptions{}, 0);
  w.PutU64("0.read", "fingerprint", counts.snapshot_fingerprint());
  std::string v1 = w.Finish();
  v1[4] = 1;  // the version byte; then the CRC over everything before it
  v1.resize(v1.size() - 4);
  PutFixed32(&v1, crc32c::Mask(crc32c::Value(v1)));
  auto resumed = MakeIt(build(), Options(1));
  Status s = resumed->Restore(v1);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<int64_t> tail = Drain(resumed.get());
  head.insert(head.end(), tail.begin(), tail.end());
  EXPECT_EQ(head, expect);
  // The default (chunks) pipeline refuses it and says how to continue.
  auto chunks = MakeIt(Pipeline(Source()), Options(1));
  s = chunks->Restore(v1);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("mode global"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace sluice::pipeline

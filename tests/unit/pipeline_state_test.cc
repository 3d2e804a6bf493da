// Save / Restore: at every breakpoint (start, inside a batch, epoch boundaries, last
// element) the restored stream equals the rest of the uninterrupted one, in every shuffle
// mode; states are small; bad states are refused with a reason.
#include "pipeline/state.h"
#include "pipeline_test_util.h"

namespace sluice::pipeline {
namespace {

using testing::Drain;
using testing::IdMap;
using testing::Ids;
using testing::MakeIt;
using testing::ParseId;

const std::vector<uint64_t> kShards = {7, 13, 0, 9};  // 29 records: no batch divides it

Dataset Read(ShuffleMode mode) {
  ShuffleOptions so;
  so.mode = mode;
  so.seed = 42;
  so.block_shards = 2;
  so.buffer_size = 5;
  return Ids(kShards).Shuffle(so);
}

using Build = Dataset (*)(ShuffleMode mode, int64_t prefetch);

// Batches straddle epoch boundaries (29 records, batch 4, 3 epochs).
Dataset BatchedAcrossEpochs(ShuffleMode mode, int64_t prefetch) {
  return Read(mode).Map(ParseId, IdMap(3)).Repeat(3).Batch(4).Prefetch(prefetch);
}

// Element by element, with take/skip counters and a filter.
Dataset ElementsWithCounters(ShuffleMode mode, int64_t prefetch) {
  auto not7 = [](const Element& e, const MapContext&) -> Result<bool> {
    return e.tensors[0].data<int64_t>()[0] % 7 != 3;
  };
  return Read(mode)
      .Map(ParseId, IdMap(2))
      .Filter(not7)
      .Repeat(2)
      .Skip(3)
      .Take(45)
      .Prefetch(prefetch);
}

// Per-epoch pipelines under repeat: the batch never crosses an epoch.
Dataset RepeatOfBatches(ShuffleMode mode, int64_t prefetch) {
  return Read(mode).Map(ParseId, IdMap(2)).Batch(5).Prefetch(prefetch).Repeat(2).Prefetch(1);
}

// bucket_by_length holds elements across emissions (and epochs).
Dataset Buckets(ShuffleMode mode, int64_t prefetch) {
  auto seq = [](Element* e, const MapContext& ctx) -> Status {
    int64_t id = std::stoll(std::string(e->tensors[0].string(0)));
    e->tensors[0].ResizeDense(DType::kInt64, Shape{id % 5 + 1}, ctx.pool());
    std::fill_n(e->tensors[0].data<int64_t>(), id % 5 + 1, id);
    return Status::OK();
  };
  MapOptions mo;
  mo.parallelism = 2;
  mo.output_schema = Schema({FeatureInfo{"seq", DType::kInt64, Shape{-1}}});
  BucketOptions bo;
  bo.length_feature = "seq";
  bo.boundaries = {2, 4};
  bo.batch_sizes = {3, 2, 4};
  bo.padding.masks = false;
  return Read(mode).Map(seq, mo).Repeat(2).BucketByLength(bo).Prefetch(prefetch);
}

// Each element of a stream, as the ids it holds (bucket batches: first column).
std::vector<std::vector<int64_t>> Elements(Iterator* it, size_t max = SIZE_MAX) {
  std::vector<std::vector<int64_t>> out;
  Element e;
  while (out.size() < max) {
    Result<bool> more = it->Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    const Tensor& t = e.tensors[0];
    std::vector<int64_t> ids;
    int64_t rows = t.shape().rank() ? t.shape()[0] : 1;
    int64_t width = t.shape().rank() > 1 ? t.shape()[1] : 1;
    for (int64_t r = 0; r < rows; ++r) ids.push_back(t.data<int64_t>()[r * width]);
    out.push_back(ids);
  }
  return out;
}

struct StateCase {
  const char* name;
  Build build;
};

class PipelineState : public ::testing::TestWithParam<std::tuple<StateCase, ShuffleMode>> {};

TEST_P(PipelineState, RestoreAtEveryBreakpointContinuesTheUninterruptedStream) {
  auto [c, mode] = GetParam();
  auto full_it = MakeIt(c.build(mode, 2), 2);
  std::vector<std::vector<int64_t>> full = Elements(full_it.get());
  ASSERT_GT(full.size(), 5u);
  for (size_t b = 0; b <= full.size(); ++b) {
    SCOPED_TRACE("breakpoint " + std::to_string(b) + " of " + std::to_string(full.size()));
    auto it = MakeIt(c.build(mode, b % 2 ? 0 : 3), 2);  // with and without running ahead
    std::vector<std::vector<int64_t>> head = Elements(it.get(), b);
    ASSERT_EQ(head.size(), b);
    Result<std::string> state = it->Save();
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    // Restore into an iterator with other threads and prefetch depth.
    auto resumed = MakeIt(c.build(mode, 7), 3);
    ASSERT_TRUE(resumed->Restore(*state).ok());
    std::vector<std::vector<int64_t>> tail = Elements(resumed.get());
    head.insert(head.end(), tail.begin(), tail.end());
    ASSERT_EQ(head, full);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, PipelineState,
    ::testing::Combine(::testing::Values(StateCase{"BatchedAcrossEpochs", BatchedAcrossEpochs},
                                         StateCase{"ElementsWithCounters", ElementsWithCounters},
                                         StateCase{"RepeatOfBatches", RepeatOfBatches},
                                         StateCase{"Buckets", Buckets}),
                       ::testing::Values(ShuffleMode::kNone, ShuffleMode::kGlobal,
                                         ShuffleMode::kBlock, ShuffleMode::kBuffer,
                                         ShuffleMode::kChunks)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" +
             std::string(ShuffleModeName(std::get<1>(info.param)));
    });

TEST(PipelineStateSize, GlobalBlockAndChunksStatesGrowOnHugeEpochs) {
  auto source = std::make_shared<testing::VirtualSource>(1000, 10'000);  // 10M records
  for (ShuffleMode mode : {ShuffleMode::kGlobal, ShuffleMode::kBlock, ShuffleMode::kChunks}) {
    ShuffleOptions so{mode, 5, 4, 0};
    Dataset ds = Dataset::FromSource(source)
                     .Shuffle(so)
                     .Shard(3, 8)
                     .Map(ParseId, IdMap(2))
                     .Repeat()
                     .Batch(256)
                     .Prefetch(2);
    auto it = MakeIt(ds, 2);
    Drain(it.get(), 7);
    Result<std::string> state = it->Save();
    ASSERT_TRUE(state.ok());
    EXPECT_LE(state->size(), 4096u);
    EXPECT_LE(state->size(), 512u) << "a few fixed fields";
  }
}

TEST(PipelineStateSize, RestoreDeepIntoAHugeEpochReadsSkippedRecords) {
  auto source = std::make_shared<testing::VirtualSource>(100, 100'000);  // 10M records
  for (ShuffleMode mode : {ShuffleMode::kGlobal, ShuffleMode::kChunks}) {
    SCOPED_TRACE(std::string(ShuffleModeName(mode)));
    Dataset ds = Dataset::FromSource(source).Shuffle({mode, 1, 4, 0}).Map(ParseId, IdMap(1));
    auto it = MakeIt(ds, 1);
    Drain(it.get(), 3);
    // The state of "9,999,990 records consumed": the source's state is just that number.
    Result<StateReader> saved = StateReader::Parse(*it->Save());
    ASSERT_TRUE(saved.ok());
    StateWriter w = saved->ToWriter();
    w.PutU64("0.read", "consumed", 9'999'990);
    it.reset();  // no more read-ahead on the shared source
    auto resumed = MakeIt(ds, 1);
    uint64_t before = source->reads();
    ASSERT_TRUE(resumed->Restore(w.Finish()).ok());
    EXPECT_EQ(source->reads(), before) << "restore must not replay consumed records";
    std::vector<int64_t> rest = Drain(resumed.get());
    ASSERT_EQ(rest.size(), 10u);
    OrderOptions order_options{mode, 1, 4};
    auto chunks = SnapshotChunks::Of(*source);
    ASSERT_TRUE(chunks.ok());
    const ChunkWindow window = ResolveChunkWindow((*chunks)->size(), (*chunks)->decoded_bytes(),
                                                  ChunkCacheCapacity(1ull << 30), {});
    order_options.lanes = window.lanes;
    order_options.lane_window = window.lane_window;
    GlobalOrder order(source->shard_records(), order_options, 0, (*chunks)->starts());
    for (size_t k = 0; k < rest.size(); ++k) {
      EXPECT_EQ(static_cast<uint64_t>(rest[k]), order.RecordAt(9'999'990 + k));
    }
    EXPECT_LE(source->reads() - before, 10u + 64u) << "only the rest of the epoch is read";
  }
}

TEST(PipelineStateErrors, StateOfAnotherPipelineIsRefused) {
  auto it = MakeIt(Ids({10}).Map(ParseId, IdMap()).Batch(2), 1);
  Drain(it.get(), 1);
  std::string state = *it->Save();
  auto other = MakeIt(Ids({10}).Map(ParseId, IdMap()).Take(3), 1);
  Status s = other->Restore(state);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("different stages"), std::string::npos);
}

TEST(PipelineStateErrors, OtherSeedOrSnapshotIsRefused) {
  auto it = MakeIt(Ids({10, 5}).Shuffle({.seed = 1}), 1);
  Drain(it.get(), 1);
  std::string state = *it->Save();
  Status seed = MakeIt(Ids({10, 5}).Shuffle({.seed = 2}), 1)->Restore(state);
  EXPECT_EQ(seed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(seed.message().find("seed"), std::string::npos) << seed.ToString();
  Status snapshot = MakeIt(Ids({10, 6}).Shuffle({.seed = 1}), 1)->Restore(state);
  EXPECT_EQ(snapshot.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(snapshot.message().find("snapshot"), std::string::npos);
}

TEST(PipelineStateErrors, CorruptStateIsRefusedAndIteratorStaysUsable) {
  auto it = MakeIt(Ids({10}).Shuffle({.seed = 1}), 1);
  Drain(it.get(), 4);
  std::string state = *it->Save();
  std::string flipped = state;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_EQ(it->Restore(flipped).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(it->Restore("garbage").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(it->Restore(state.substr(0, state.size() - 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Drain(it.get()).size(), 6u) << "a failed restore leaves the old stream running";
}

TEST(PipelineStateErrors, UnorderedMapCannotSaveExactState) {
  MapOptions mo = IdMap(2);
  mo.ordered = false;
  auto it = MakeIt(Ids({10}).Map(ParseId, mo), 2);
  Drain(it.get(), 1);
  EXPECT_EQ(it->Save().status().code(), StatusCode::kFailedPrecondition);
}

TEST(PipelineState, SaveRightAfterRestoreReturnsTheSameState) {
  auto it = MakeIt(BatchedAcrossEpochs(ShuffleMode::kGlobal, 2), 2);
  Drain(it.get(), 9);
  std::string state = *it->Save();
  EXPECT_EQ(*it->Save(), state) << "Save is repeatable";
  auto resumed = MakeIt(BatchedAcrossEpochs(ShuffleMode::kGlobal, 2), 2);
  ASSERT_TRUE(resumed->Restore(state).ok());
  EXPECT_EQ(*resumed->Save(), state);
}

}  // namespace
}  // namespace sluice::pipeline

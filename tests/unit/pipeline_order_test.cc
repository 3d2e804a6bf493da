// Determinism (same seed -> same stream for any thread count and prefetch depth), elastic
// resume across world sizes, and shuffle quality of global vs buffer mode.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "pipeline_test_util.h"

namespace sluice::pipeline {
namespace {

using testing::Drain;
using testing::IdMap;
using testing::Ids;
using testing::MakeIt;
using testing::ParseId;

const std::vector<uint64_t> kShards = {50, 0, 73, 41, 36};  // 200 records

Dataset Pipeline(ShuffleMode mode, int64_t prefetch, uint32_t rank = 0, uint32_t world = 1) {
  ShuffleOptions so{mode, 11, 2, 16};
  ReadOptions ro;
  ro.chunk_records = 7;  // many small read tasks
  MapOptions mo = IdMap(kAutotune);
  mo.chunk_elements = 5;
  return Ids(kShards, ro)
      .Shuffle(so)
      .Shard(rank, world)
      .Map(ParseId, mo)
      .Repeat(2)
      .Batch(8)
      .Prefetch(prefetch);
}

class PipelineDeterminism : public ::testing::TestWithParam<ShuffleMode> {};

TEST_P(PipelineDeterminism, SameSeedSameStreamForAnyThreadsAndPrefetch) {
  auto reference = MakeIt(Pipeline(GetParam(), 0), 1, /*autotune=*/false);
  std::vector<int64_t> expect = Drain(reference.get());
  ASSERT_EQ(expect.size(), 400u);
  for (uint32_t threads : {1u, 2u, 8u}) {
    for (int64_t prefetch : {0, 1, 8}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", prefetch " + std::to_string(prefetch));
      auto it = MakeIt(Pipeline(GetParam(), prefetch), threads, /*autotune=*/true);
      EXPECT_EQ(Drain(it.get()), expect);
    }
  }
}

TEST_P(PipelineDeterminism, OtherSeedOtherStream) {
  if (GetParam() == ShuffleMode::kNone) GTEST_SKIP() << "no seed in shard order";
  auto a = MakeIt(Pipeline(GetParam(), 2), 2);
  auto b = MakeIt(
      Ids(kShards).Shuffle({GetParam(), 12, 2, 16}).Map(ParseId, IdMap()).Repeat(2).Batch(8), 2);
  EXPECT_NE(Drain(a.get()), Drain(b.get()));
}

INSTANTIATE_TEST_SUITE_P(AllModes, PipelineDeterminism,
                         ::testing::Values(ShuffleMode::kNone, ShuffleMode::kGlobal,
                                           ShuffleMode::kBlock, ShuffleMode::kBuffer,
                                           ShuffleMode::kChunks),
                         [](const auto& info) { return std::string(ShuffleModeName(info.param)); });

TEST(PipelineDeterminism, UnorderedMapYieldsTheSameMultiset) {
  MapOptions mo = IdMap(4);
  mo.ordered = false;
  mo.chunk_elements = 3;
  auto it = MakeIt(Ids(kShards).Shuffle({.seed = 3}).Map(ParseId, mo), 4);
  std::vector<int64_t> got = Drain(it.get());
  std::sort(got.begin(), got.end());
  std::vector<int64_t> all(200);
  for (int64_t i = 0; i < 200; ++i) all[static_cast<size_t>(i)] = i;
  EXPECT_EQ(got, all);
}

// ---- Elastic resume ----

struct Epoch {
  std::multiset<int64_t> samples;
  std::vector<size_t> per_rank;
};

// W ranks take `steps` batches each and save; the states are restored on W2 ranks (each with
// the state of any old rank: all ranks saved after the same number of steps), which run to
// the end of the epoch.
Epoch RunElastic(ShuffleMode mode, uint32_t w1, size_t steps, uint32_t w2) {
  const std::vector<uint64_t> shards = {100, 37, 0, 211, 52};  // 400 records
  auto pipeline = [&](uint32_t rank, uint32_t world) {
    return Ids(shards)
        .Shuffle({mode, 5, 2, 0})
        .Shard(rank, world)
        .Map(ParseId, IdMap(2))
        .Batch(4)
        .Prefetch(3);
  };
  Epoch e;
  std::string state;
  for (uint32_t r = 0; r < w1; ++r) {
    auto it = MakeIt(pipeline(r, w1), 2);
    std::vector<int64_t> got = Drain(it.get(), steps);
    EXPECT_EQ(got.size(), steps * 4);
    e.samples.insert(got.begin(), got.end());
    state = *it->Save();
  }
  for (uint32_t r = 0; r < w2; ++r) {
    auto it = MakeIt(pipeline(r, w2), 2);
    Status s = it->Restore(state);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<int64_t> got = Drain(it.get());
    e.per_rank.push_back(got.size());
    e.samples.insert(got.begin(), got.end());
  }
  return e;
}

class PipelineElastic : public ::testing::TestWithParam<ShuffleMode> {};

TEST_P(PipelineElastic, ShrinkingAndOddWorldSizesMissAndRepeatNothing) {
  for (uint32_t w2 : {2u, 3u}) {
    SCOPED_TRACE("4 ranks -> " + std::to_string(w2));
    Epoch e = RunElastic(GetParam(), 4, 9, w2);
    // 4 x 9 x 4 = 144 consumed; 256 left: W=2 -> 128 each; W=3 -> 85 each (1 dropped).
    std::set<int64_t> distinct(e.samples.begin(), e.samples.end());
    EXPECT_EQ(distinct.size(), e.samples.size()) << "a sample was repeated";
    uint64_t dropped = 256 % w2;
    EXPECT_EQ(e.samples.size(), 400u - dropped);
    for (size_t n : e.per_rank) EXPECT_EQ(n, e.per_rank[0]) << "ranks yield equal counts";
    EXPECT_GE(*distinct.begin(), 0);
    EXPECT_LT(*distinct.rbegin(), 400);
  }
}

INSTANTIATE_TEST_SUITE_P(RandomAccessModes, PipelineElastic,
                         ::testing::Values(ShuffleMode::kNone, ShuffleMode::kGlobal,
                                           ShuffleMode::kBlock, ShuffleMode::kChunks),
                         [](const auto& info) { return std::string(ShuffleModeName(info.param)); });

TEST(PipelineElastic, GrowingWorldSizeAlsoWorks) {
  Epoch e = RunElastic(ShuffleMode::kGlobal, 2, 10, 5);  // 80 consumed, 320 left = 5 x 64
  std::set<int64_t> distinct(e.samples.begin(), e.samples.end());
  EXPECT_EQ(distinct.size(), 400u);
  EXPECT_EQ(e.samples.size(), 400u);
}

TEST(PipelineElastic, BufferModeRefusesAnotherWorldSize) {
  auto it = MakeIt(Ids({40}).Shuffle({ShuffleMode::kBuffer, 1, 4, 8}).Shard(0, 4), 1);
  Drain(it.get(), 2);
  std::string state = *it->Save();
  Status s =
      MakeIt(Ids({40}).Shuffle({ShuffleMode::kBuffer, 1, 4, 8}).Shard(0, 2), 1)->Restore(state);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("elastic"), std::string::npos) << s.ToString();
}

TEST(PipelineElastic, PaddedRemainderGivesEveryRankTheSameCount) {
  const uint32_t world = 3;  // 100 records: pad to 102
  std::multiset<int64_t> all;
  for (uint32_t r = 0; r < world; ++r) {
    auto it = MakeIt(Ids({100}).Shuffle({.seed = 2}).Shard(r, world, Remainder::kPad), 1);
    std::vector<int64_t> got = Drain(it.get());
    EXPECT_EQ(got.size(), 34u);
    all.insert(got.begin(), got.end());
  }
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 100u);
}

// ---- Shuffle quality ----

// Chi-square of where record 0 lands (10 position buckets) over many seeds.
double PositionChiSquare(ShuffleMode mode, size_t buffer) {
  const int n = 200, buckets = 10, seeds = 300;
  std::vector<int> hist(buckets, 0);
  for (int seed = 0; seed < seeds; ++seed) {
    auto it =
        MakeIt(Ids({50, 50, 50, 50}).Shuffle({mode, static_cast<uint64_t>(seed), 2, buffer}), 1);
    std::vector<int64_t> got = Drain(it.get());
    size_t pos = static_cast<size_t>(std::find(got.begin(), got.end(), 0) - got.begin());
    ++hist[pos * buckets / n];
  }
  double expect = static_cast<double>(seeds) / buckets, chi = 0;
  for (int h : hist) chi += (h - expect) * (h - expect) / expect;
  return chi;
}

TEST(PipelineShuffleQuality, GlobalModeSpreadsRecordsUniformlyUnlikeASmallBuffer) {
  // 9 degrees of freedom: the 99.9% quantile is 27.9.
  EXPECT_LT(PositionChiSquare(ShuffleMode::kGlobal, 0), 27.9);
  EXPECT_GT(PositionChiSquare(ShuffleMode::kBuffer, 10), 27.9)
      << "a 10-element buffer keeps record 0 near the front";
}

}  // namespace
}  // namespace sluice::pipeline

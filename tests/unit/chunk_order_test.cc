// The chunk order (docs/order.md, "Chunks mode"), its rank slicing and its chunk plan, on
// synthetic chunk layouts: exactly once per epoch, windows hold their records, ranks of W
// dividing L read disjoint chunks, the plan covers every chunk a rank reads, and the window
// sizing rules.
#include "sluice/pipeline/chunk_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "chi_square.h"
#include "sluice/pipeline/chunk_plan.h"

namespace sluice::pipeline {
namespace {

// Chunks of `sizes[i]` records each; returns their first ids and the total.
std::shared_ptr<const std::vector<uint64_t>> Starts(const std::vector<uint64_t>& sizes) {
  auto starts = std::make_shared<std::vector<uint64_t>>(1, 0);
  for (uint64_t m : sizes) starts->push_back(starts->back() + m);
  return starts;
}

std::vector<uint64_t> Varied(size_t chunks, uint64_t seed) {
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < chunks; ++i) sizes.push_back(1 + Mix64(seed + i) % 40);
  return sizes;
}

struct Layout {
  std::vector<uint64_t> sizes;
  uint32_t lanes;
  uint64_t lane_window;
};

std::vector<Layout> Layouts() {
  return {{{7}, 1, 1},           {{5, 5, 5, 5}, 1, 2},   {Varied(30, 1), 1, 4},
          {Varied(30, 2), 4, 1}, {Varied(50, 3), 8, 3},  {Varied(64, 4), 24, 2},
          {{3, 1, 2}, 5, 1},     {Varied(10, 5), 3, 100},
          // more lanes than a Placer caches (ChunkOrder::Placer::kCachedLanes)
          {Varied(300, 6), 100, 2}, {Varied(140, 7), 65, 1}};
}

TEST(ChunkOrder, RecordMissedOrRepeatedInAnEpoch) {
  for (const Layout& l : Layouts()) {
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      ChunkOrder order(Starts(l.sizes), 5, epoch, l.lanes, l.lane_window);
      std::vector<uint64_t> seen;
      for (uint64_t p = 0; p < order.size(); ++p) seen.push_back(order.At(p).record);
      std::sort(seen.begin(), seen.end());
      std::vector<uint64_t> all(order.size());
      std::iota(all.begin(), all.end(), 0);
      EXPECT_EQ(seen, all) << "lanes " << l.lanes << " window " << l.lane_window;
    }
  }
}

// The Placer (the read stage's per-task evaluation, caching a few lanes' windows) agrees with
// At() for the positions a rank walks in order, strided ranks of several world sizes, and
// jumps anywhere (a cached window is never used for a position outside it).
TEST(ChunkOrder, PlacerAgreesWithAt) {
  for (const Layout& l : Layouts()) {
    ChunkOrder order(Starts(l.sizes), 9, 1, l.lanes, l.lane_window);
    const uint64_t n = order.size();
    for (uint64_t world : {1, 2, 3, 5, 8}) {
      for (uint64_t rank = 0; rank < std::min<uint64_t>(world, n); ++rank) {
        ChunkOrder::Placer placer(order);
        for (uint64_t p = rank; p < n; p += world) {
          const ChunkOrder::Place want = order.At(p), got = placer.At(p);
          ASSERT_EQ(got.record, want.record) << "lanes " << l.lanes << " position " << p;
          ASSERT_EQ(got.chunk, want.chunk) << "lanes " << l.lanes << " position " << p;
        }
      }
    }
    ChunkOrder::Placer placer(order);
    for (uint64_t i = 0; i < 3 * n; ++i) {
      const uint64_t p = Mix64(i + 77) % n;
      ASSERT_EQ(placer.At(p).record, order.At(p).record) << "lanes " << l.lanes << " jump " << p;
    }
  }
}

// AtMany (runs of positions placed together, their permutations four at a time) agrees with
// At() on a rank's walk, on runs longer than its pieces, and on jumps across more lanes than
// it caches (a piece ends before a cached window it uses would be replaced).
TEST(ChunkOrder, PlacerAtManyAgreesWithAt) {
  for (const Layout& l : Layouts()) {
    ChunkOrder order(Starts(l.sizes), 9, 2, l.lanes, l.lane_window);
    const uint64_t n = order.size();
    for (uint64_t world : {1, 3, 8}) {
      for (size_t run : {1, 3, 7, 64, 150}) {
        for (uint64_t rank = 0; rank < std::min<uint64_t>(world, n); ++rank) {
          ChunkOrder::Placer placer(order);
          std::vector<uint64_t> positions;
          for (uint64_t p = rank; p < n; p += world) positions.push_back(p);
          for (size_t begin = 0; begin < positions.size(); begin += run) {
            const size_t m = std::min(run, positions.size() - begin);
            std::vector<ChunkOrder::Place> got(m);
            std::vector<uint64_t> windows(m);
            std::vector<uint32_t> lanes(m);
            placer.AtMany(positions.data() + begin, m, got.data(), windows.data(), lanes.data());
            for (size_t j = 0; j < m; ++j) {
              const ChunkOrder::Place want = order.At(positions[begin + j]);
              ASSERT_EQ(got[j].record, want.record) << "lanes " << l.lanes << " run " << run;
              ASSERT_EQ(got[j].chunk, want.chunk) << "lanes " << l.lanes << " run " << run;
              ASSERT_EQ(windows[j], order.WindowAt(positions[begin + j]).index)
                  << "lanes " << l.lanes << " run " << run;
              ASSERT_EQ(lanes[j], positions[begin + j] % order.lanes());
            }
            // The run's last position: the placer is past its lane's earlier windows, not
            // past its own.
            const ChunkOrder::Window w = order.WindowAt(positions[begin + m - 1]);
            EXPECT_FALSE(placer.PastWindow(w.lane, w.index));
            if (w.index > 0) {
              EXPECT_TRUE(placer.PastWindow(w.lane, w.index - 1));
            }
          }
        }
      }
    }
    std::vector<uint64_t> jumps;
    for (uint64_t i = 0; i < 3 * n; ++i) jumps.push_back(Mix64(i + 78) % n);
    std::vector<ChunkOrder::Place> got(jumps.size());
    ChunkOrder::Placer placer(order);
    placer.AtMany(jumps.data(), jumps.size(), got.data());
    for (size_t j = 0; j < jumps.size(); ++j) {
      ASSERT_EQ(got[j].record, order.At(jumps[j]).record) << "lanes " << l.lanes << " jump " << j;
    }
  }
}

TEST(ChunkOrder, EpochsRepeatTheirOrder) {
  auto starts = Starts(Varied(40, 6));
  ChunkOrder a(starts, 5, 0, 4, 2), b(starts, 5, 1, 4, 2), c(starts, 6, 0, 4, 2);
  size_t same_epoch = 0, same_seed = 0;
  for (uint64_t p = 0; p < a.size(); ++p) {
    same_epoch += a.At(p).record == b.At(p).record;
    same_seed += a.At(p).record == c.At(p).record;
  }
  EXPECT_LT(same_epoch, a.size() / 10);
  EXPECT_LT(same_seed, a.size() / 10);
}

TEST(ChunkOrder, RecordOutsideItsWindowsChunks) {
  for (const Layout& l : Layouts()) {
    auto starts = Starts(l.sizes);
    ChunkOrder order(starts, 9, 1, l.lanes, l.lane_window);
    for (uint64_t p = 0; p < order.size(); ++p) {
      const ChunkOrder::Place place = order.At(p);
      ASSERT_GE(place.record, (*starts)[place.chunk]);
      ASSERT_LT(place.record, (*starts)[place.chunk + 1]);
      const ChunkOrder::Window w = order.WindowAt(p);
      EXPECT_EQ(w.lane, p % order.lanes());
      EXPECT_LE(w.first, p / order.lanes());
      EXPECT_LT(p / order.lanes(), w.end);
      EXPECT_LE(w.end_slot - w.first_slot, order.lane_window());
      bool in_window = false;
      for (uint64_t s = w.first_slot; s < w.end_slot; ++s) {
        in_window |= order.ChunkInSlot(s) == place.chunk;
      }
      EXPECT_TRUE(in_window) << "position " << p;
    }
  }
}

// A window holding the whole lane of a single-lane order is one permutation of everything:
// the position of a fixed record is uniform over seeds (the global order's test).
TEST(ChunkOrder, OneWindowIsNotAUniformPermutation) {
  const uint64_t n = 200;
  auto starts = Starts(std::vector<uint64_t>(20, 10));
  std::vector<double> observed(10, 0);
  const int seeds = 4000;
  for (int seed = 0; seed < seeds; ++seed) {
    ChunkOrder order(starts, static_cast<uint64_t>(seed), 0, 1, 1000);
    for (uint64_t p = 0; p < n; ++p) {
      if (order.At(p).record == 0) observed[p * 10 / n] += 1;
    }
  }
  std::vector<double> expected(10, seeds / 10.0);
  EXPECT_LT(testing::ChiSquare(observed, expected), testing::ChiSquareCritical(9));
}

// Chunks read by each rank of W when positions p = rank (mod W) are taken.
std::vector<std::set<uint64_t>> ChunksPerRank(const ChunkOrder& order, uint32_t world) {
  std::vector<std::set<uint64_t>> out(world);
  for (uint64_t p = 0; p < order.size(); ++p) out[p % world].insert(order.At(p).chunk);
  return out;
}

TEST(ChunkOrder, RanksDividingTheLanesShareMoreThanTheCutChunks) {
  const auto sizes = Varied(200, 7);
  ChunkOrder order(Starts(sizes), 3, 0, 24, 2);
  for (uint32_t world : {1u, 2u, 3u, 4u, 6u, 8u, 12u, 24u}) {
    uint64_t reads = 0;
    for (const auto& chunks : ChunksPerRank(order, world)) reads += chunks.size();
    // Only the <= L - 1 chunks cut by a lane boundary are read by a second rank.
    EXPECT_LE(reads, sizes.size() + order.lanes() - 1) << "world " << world;
  }
}

TEST(ChunkOrder, RanksNotDividingTheLanesReadChunksSeveralTimes) {
  ChunkOrder order(Starts(Varied(200, 8)), 3, 0, 24, 2);
  uint64_t reads = 0;
  for (const auto& chunks : ChunksPerRank(order, 5)) reads += chunks.size();
  EXPECT_GT(reads, 4 * 200u);  // gcd(5, 24) = 1: every rank reads (almost) every chunk
}

// A one-shard source whose chunks are `sizes`.
class LayoutSource final : public RecordSource {
 public:
  explicit LayoutSource(const std::vector<uint64_t>& sizes) {
    uint64_t first = 0;
    for (uint64_t m : sizes) {
      format::ShardChunk c;
      c.first_record = first;
      c.records = m;
      chunks_.push_back(c);
      first += m;
    }
    counts_ = {first};
  }
  const std::vector<uint64_t>& shard_records() const override { return counts_; }
  const std::string& shard_name(uint32_t) const override { return name_; }
  Result<ByteView> Read(uint32_t, uint64_t, std::string*) const override { return ByteView(); }
  const std::vector<format::ShardChunk>& chunks(uint32_t) const override { return chunks_; }

 private:
  std::vector<uint64_t> counts_;
  std::vector<format::ShardChunk> chunks_;
  std::string name_ = "s";
};

// The plan of each rank covers every sample it reads: the chunk of its k-th record has a
// need with first_sample <= k <= last_sample; needs come in first_sample order.
void ExpectPlanCoversSlice(const std::vector<uint64_t>& sizes, uint32_t lanes, uint64_t window,
                           uint32_t world, uint64_t start, uint64_t from) {
  SCOPED_TRACE(::testing::Message() << "L=" << lanes << " K=" << window << " W=" << world
                                    << " start=" << start << " from=" << from);
  auto starts = Starts(sizes);
  std::vector<uint64_t> counts = {starts->back()};
  auto order = std::make_shared<const GlobalOrder>(
      counts, OrderOptions{ShuffleMode::kChunks, 11, 4, lanes, window}, 2, starts);
  LayoutSource source(sizes);
  auto chunks = SnapshotChunks::Of(source);
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  for (uint32_t rank = 0; rank < world; ++rank) {
    ShardingOptions sharding{rank, world, Remainder::kDrop};
    RankSlice slice(order.get(), sharding, start);
    ChunkPlan plan(order, *chunks, sharding, start, from);
    std::multimap<uint64_t, std::pair<uint64_t, uint64_t>> needs;  // chunk -> [first, last]
    ChunkNeed need;
    uint64_t previous = 0;
    while (plan.Next(&need)) {
      EXPECT_GE(need.first_sample, previous);
      EXPECT_LE(need.first_sample, need.last_sample);
      previous = need.first_sample;
      needs.emplace(need.chunk, std::pair(need.first_sample, need.last_sample));
    }
    for (uint64_t k = from; k < slice.size(); ++k) {
      const uint64_t chunk = order->chunk_order()->At(slice.PositionAt(k)).chunk;
      auto [begin, end] = needs.equal_range(chunk);
      bool covered = false;
      for (auto it = begin; it != end; ++it) {
        covered |= it->second.first <= k && k <= it->second.second;
      }
      ASSERT_TRUE(covered) << "rank " << rank << " sample " << k << " chunk " << chunk;
    }
  }
}

TEST(ChunkPlan, SampleReadOutsideThePlan) {
  const auto sizes = Varied(60, 9);
  ExpectPlanCoversSlice(sizes, 1, 4, 1, 0, 0);
  ExpectPlanCoversSlice(sizes, 8, 2, 1, 0, 0);
  ExpectPlanCoversSlice(sizes, 8, 2, 4, 0, 0);
  ExpectPlanCoversSlice(sizes, 8, 2, 3, 0, 0);    // W does not divide L
  ExpectPlanCoversSlice(sizes, 8, 2, 4, 101, 0);  // an elastic restore's start
  ExpectPlanCoversSlice(sizes, 8, 2, 4, 0, 57);   // a restore inside the slice
  ExpectPlanCoversSlice(sizes, 24, 1, 16, 7, 3);
}

TEST(ChunkPlan, RanksOfWDividingLPlanChunksOfOtherRanks) {
  const auto sizes = Varied(120, 10);
  LayoutSource source(sizes);
  auto chunks = SnapshotChunks::Of(source);
  ASSERT_TRUE(chunks.ok());
  auto order = std::make_shared<const GlobalOrder>(source.shard_records(),
                                                   OrderOptions{ShuffleMode::kChunks, 1, 4, 8, 3},
                                                   0, (*chunks)->starts());
  for (uint32_t world : {2u, 4u, 8u}) {
    uint64_t planned = 0;
    for (uint32_t rank = 0; rank < world; ++rank) {
      ChunkPlan plan(order, *chunks, ShardingOptions{rank, world, Remainder::kDrop}, 0);
      std::set<uint64_t> mine;
      ChunkNeed need;
      while (plan.Next(&need)) mine.insert(need.chunk);
      planned += mine.size();
    }
    EXPECT_LE(planned, sizes.size() + 7) << "world " << world;  // + the L - 1 cut chunks
  }
}

TEST(ChunkWindow, DefaultsFollowTheBudgetAndTheSnapshot) {
  // 1,000 chunks of 1 MiB, a 1 GiB budget: 512 MiB of cache, lanes <= 1000 / 10 -> 48,
  // K = 512 / 49 = 10 chunks per lane window.
  ChunkWindow w = ResolveChunkWindow(1000, 1000ull << 20, ChunkCacheCapacity(1ull << 30), {});
  EXPECT_EQ(w.lanes, 48u);
  EXPECT_EQ(w.lane_window, 10u);
  // A small dataset: one lane, one window holding it all.
  w = ResolveChunkWindow(10, 10ull << 20, 512ull << 20, {});
  EXPECT_EQ(w.lanes, 1u);
  EXPECT_EQ(w.lane_window, 10u);
  // Explicit window in chunks or bytes, explicit lanes.
  w = ResolveChunkWindow(1000, 1000ull << 20, 512ull << 20, {0, 100, 4});
  EXPECT_EQ(w.lanes, 4u);
  EXPECT_EQ(w.lane_window, 25u);
  w = ResolveChunkWindow(1000, 1000ull << 20, 512ull << 20, {64ull << 20, 0, 8});
  EXPECT_EQ(w.lane_window, 8u);
  // A cache of 3 chunks leaves room for 2 lanes at most.
  EXPECT_EQ(DefaultLanes(100000, 3), 2u);
  // Unknown chunk sizes (sources without bytes): everything in one window per lane.
  w = ResolveChunkWindow(500, 0, 512ull << 20, {});
  EXPECT_EQ(w.lanes, 48u);
  EXPECT_EQ(w.lane_window, 500u);
}

}  // namespace
}  // namespace sluice::pipeline

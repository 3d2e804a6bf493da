// Rank slices and elastic resume (docs/order.md): ranks of one world size save after k samples
// each, ranks of another world size restore from GlobalConsumedAfter(k), and the union of
// everything yielded over the epoch must be the epoch's record set.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "sluice/pipeline/global_order.h"

namespace sluice::pipeline {
namespace {

struct Phase {
  std::vector<uint64_t> records;  // everything all ranks yielded, rank by rank
  uint64_t next_start = 0;        // GlobalConsumedAfter(samples per rank)
  uint64_t slice_size = 0;        // samples per rank had the phase run to the end of the epoch
};

// All `world` ranks start at `start` and take `k` samples each (or all they have, if fewer).
Phase RunPhase(const GlobalOrder& order, uint32_t world, Remainder remainder, uint64_t start,
               uint64_t k) {
  Phase phase;
  for (uint32_t rank = 0; rank < world; ++rank) {
    RankSlice slice(&order, ShardingOptions{rank, world, remainder}, start);
    if (rank == 0) {
      phase.slice_size = slice.size();
      phase.next_start = slice.GlobalConsumedAfter(std::min(k, slice.size()));
    }
    EXPECT_EQ(slice.size(), phase.slice_size) << "rank " << rank << " yields another count";
    for (uint64_t i = 0; i < std::min(k, slice.size()); ++i) {
      phase.records.push_back(slice.RecordAt(i));
    }
  }
  return phase;
}

constexpr uint64_t kToEnd = ~uint64_t{0};

std::vector<uint64_t> Sorted(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Positions [first, last) of the epoch as records.
std::vector<uint64_t> RecordsAt(const GlobalOrder& order, uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t p = first; p < last; ++p) out.push_back(order.RecordAt(p));
  return out;
}

// Save with W=4 after k samples per rank, restore with `restore_world`, run to the end.
void ExpectExactEpochAfterResize(const GlobalOrder& order, Remainder remainder, uint64_t k,
                                 uint32_t restore_world) {
  SCOPED_TRACE(::testing::Message()
               << "N=" << order.size() << " k=" << k << " W=4->" << restore_world << " "
               << (remainder == Remainder::kDrop ? "drop" : "pad"));
  Phase before = RunPhase(order, 4, remainder, 0, k);
  Phase after = RunPhase(order, restore_world, remainder, before.next_start, kToEnd);
  std::vector<uint64_t> yielded = before.records;
  yielded.insert(yielded.end(), after.records.begin(), after.records.end());
  const uint64_t n = order.size();
  if (remainder == Remainder::kDrop) {
    // Exactly the positions before the final cutoff; fewer than W' positions are dropped.
    const uint64_t cutoff = before.next_start + after.slice_size * restore_world;
    EXPECT_LT(n - cutoff, restore_world) << "dropped too many positions";
    EXPECT_EQ(Sorted(yielded), Sorted(RecordsAt(order, 0, cutoff))) << "records missed or repeated";
  } else {
    // Every record, plus repeats of the epoch's first positions as padding.
    ASSERT_GE(yielded.size(), n) << "records missed";
    std::vector<uint64_t> expected = RecordsAt(order, 0, n);
    for (uint64_t p = 0; p < yielded.size() - n; ++p) expected.push_back(order.RecordAt(p % n));
    EXPECT_EQ(Sorted(yielded), Sorted(expected)) << "records missed or repeated";
    EXPECT_LT(yielded.size() - n, 4 + restore_world) << "padded too much";
  }
}

TEST(RankSlice, ElasticResumeMissesOrRepeatsRecords) {
  for (uint64_t total : {0, 1, 5, 1000, 1003}) {
    for (ShuffleMode mode : {ShuffleMode::kGlobal, ShuffleMode::kBlock}) {
      const std::vector<uint64_t> shards = {total / 3, 0, total - total / 3 - total / 4, total / 4};
      GlobalOrder order(shards, OrderOptions{mode, 99, 2}, 1);
      const uint64_t per_rank = total / 4;
      for (uint64_t k : {uint64_t{0}, uint64_t{1}, per_rank / 2, per_rank, per_rank + 1}) {
        for (uint32_t restore_world : {1u, 2u, 3u, 4u, 5u}) {
          ExpectExactEpochAfterResize(order, Remainder::kDrop, k, restore_world);
          ExpectExactEpochAfterResize(order, Remainder::kPad, k, restore_world);
        }
      }
    }
  }
}

TEST(RankSlice, RepeatedResizesMissOrRepeatRecords) {
  // 4 ranks, then 3, then 2, then 7: each restore starts where all ranks together stopped.
  GlobalOrder order({400, 0, 333, 270}, OrderOptions{ShuffleMode::kGlobal, 3, 4}, 0);
  uint64_t start = 0;
  std::vector<uint64_t> yielded;
  const std::pair<uint32_t, uint64_t> phases[] = {{4, 50}, {3, 61}, {2, 1}, {7, kToEnd}};
  for (auto [world, k] : phases) {
    Phase phase = RunPhase(order, world, Remainder::kDrop, start, k);
    yielded.insert(yielded.end(), phase.records.begin(), phase.records.end());
    if (k == kToEnd) {
      const uint64_t cutoff = start + phase.slice_size * world;
      EXPECT_EQ(Sorted(yielded), Sorted(RecordsAt(order, 0, cutoff)));
      EXPECT_EQ(cutoff, order.size() - (order.size() - start) % world);
    }
    start = phase.next_start;
  }
}

TEST(RankSlice, FreshEpochRanksOverlap) {
  GlobalOrder order({10, 3}, OrderOptions{ShuffleMode::kNone}, 0);  // 13 records, identity
  std::map<uint64_t, int> owners;
  for (uint32_t rank = 0; rank < 4; ++rank) {
    RankSlice slice(&order, ShardingOptions{rank, 4, Remainder::kDrop});
    ASSERT_EQ(slice.size(), 3u);
    for (uint64_t k = 0; k < slice.size(); ++k) {
      EXPECT_EQ(slice.PositionAt(k), rank + 4 * k);  // the documented stride
      owners[slice.PositionAt(k)]++;
    }
  }
  EXPECT_EQ(owners.size(), 12u);  // position 12 is the dropped remainder
  EXPECT_EQ(owners.count(12), 0u);
}

TEST(RankSlice, PaddingDoesNotWrapToEpochStart) {
  GlobalOrder order({10}, OrderOptions{ShuffleMode::kNone}, 0);
  // 10 positions over 4 ranks: 3 samples each; ranks 2 and 3 pad with positions 0 and 1.
  RankSlice rank2(&order, ShardingOptions{2, 4, Remainder::kPad});
  RankSlice rank3(&order, ShardingOptions{3, 4, Remainder::kPad});
  ASSERT_EQ(rank2.size(), 3u);
  EXPECT_EQ(rank2.PositionAt(2), 0u);
  EXPECT_EQ(rank3.PositionAt(2), 1u);
  // Restored at 8 with 4 ranks: positions 8, 9 then the padding 0, 1.
  for (uint32_t rank = 0; rank < 4; ++rank) {
    RankSlice slice(&order, ShardingOptions{rank, 4, Remainder::kPad}, 8);
    ASSERT_EQ(slice.size(), 1u);
    EXPECT_EQ(slice.PositionAt(0), (8 + rank) % 10);
  }
}

TEST(RankSlice, EpochSmallerThanWorldCrashesOrDiffersPerRank) {
  GlobalOrder order({3}, OrderOptions{ShuffleMode::kGlobal, 1}, 0);
  for (uint32_t rank = 0; rank < 8; ++rank) {
    RankSlice drop(&order, ShardingOptions{rank, 8, Remainder::kDrop});
    EXPECT_EQ(drop.size(), 0u);
    RankSlice pad(&order, ShardingOptions{rank, 8, Remainder::kPad});
    ASSERT_EQ(pad.size(), 1u);
    EXPECT_EQ(pad.PositionAt(0), rank % 3);  // wraps more than once
  }
  GlobalOrder empty({}, OrderOptions{}, 0);
  RankSlice pad(&empty, ShardingOptions{1, 2, Remainder::kPad});
  EXPECT_EQ(pad.size(), 0u) << "nothing to pad an empty epoch with";
  EXPECT_EQ(pad.GlobalConsumedAfter(5), 0u);
}

TEST(RankSlice, GlobalConsumedAfterOverflowsPastEpochEnd) {
  GlobalOrder order({10}, OrderOptions{}, 0);
  RankSlice slice(&order, ShardingOptions{0, 4, Remainder::kPad}, 2);
  EXPECT_EQ(slice.GlobalConsumedAfter(0), 2u);
  EXPECT_EQ(slice.GlobalConsumedAfter(1), 6u);
  EXPECT_EQ(slice.GlobalConsumedAfter(2), 10u);  // 2 + 8 = 10 exactly
  EXPECT_EQ(slice.GlobalConsumedAfter(3), 10u);  // the padded step is capped at the end
  EXPECT_EQ(slice.GlobalConsumedAfter(~uint64_t{0}), 10u);
}

TEST(RankSlice, StartBeyondEpochEndReadsOutOfRange) {
  GlobalOrder order({10}, OrderOptions{}, 0);
  RankSlice slice(&order, ShardingOptions{1, 2, Remainder::kPad}, 25);
  EXPECT_EQ(slice.size(), 0u);
  EXPECT_EQ(slice.GlobalConsumedAfter(0), 10u);
}

TEST(RankSlice, InvalidShardingIsNotReported) {
  EXPECT_TRUE(ValidateSharding(ShardingOptions{3, 4}).ok());
  EXPECT_EQ(ValidateSharding(ShardingOptions{4, 4}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateSharding(ShardingOptions{0, 0}).code(), StatusCode::kInvalidArgument);
  GlobalOrder order({10}, OrderOptions{}, 0);
  EXPECT_EQ(RankSlice(&order, ShardingOptions{4, 4}).size(), 0u);
  EXPECT_EQ(RankSlice(&order, ShardingOptions{0, 0}).size(), 0u);
}

}  // namespace
}  // namespace sluice::pipeline

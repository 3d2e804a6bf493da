#include "sluice/pipeline/global_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace sluice::pipeline {
namespace {

constexpr ShuffleMode kAllModes[] = {ShuffleMode::kNone, ShuffleMode::kGlobal, ShuffleMode::kBlock,
                                     ShuffleMode::kBuffer};

// Splits `total` records into uneven shards, with empty shards at the start, middle and end.
std::vector<uint64_t> UnevenShards(uint64_t total) {
  std::vector<uint64_t> shards = {0};
  uint64_t left = total;
  for (uint64_t size = 1; left > 0; size = size * 3 % 17 + 1) {
    const uint64_t take = std::min(left, size * (1 + total / 64));
    shards.push_back(take);
    if (shards.size() % 4 == 0) shards.push_back(0);
    left -= take;
  }
  shards.push_back(0);
  return shards;
}

GlobalOrder MakeOrder(std::vector<uint64_t> shards, ShuffleMode mode, uint64_t seed = 7,
                      uint64_t epoch = 0, uint32_t block_shards = 4) {
  return GlobalOrder(std::move(shards), OrderOptions{mode, seed, block_shards}, epoch);
}

std::vector<uint64_t> Materialize(const GlobalOrder& order) {
  std::vector<uint64_t> out(order.size());
  for (uint64_t p = 0; p < order.size(); ++p) out[p] = order.RecordAt(p);
  return out;
}

void ExpectPermutationOfIds(std::vector<uint64_t> ids, uint64_t total) {
  ASSERT_EQ(ids.size(), total);
  std::sort(ids.begin(), ids.end());
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(ids[i], i) << "record missed or repeated";
}

TEST(ShuffleModeName, UnknownNameIsInvalidArgument) {
  for (ShuffleMode mode : kAllModes) {
    Result<ShuffleMode> parsed = ParseShuffleMode(ShuffleModeName(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, mode);
  }
  Result<ShuffleMode> bad = ParseShuffleMode("Global");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'Global'"), std::string::npos);
}

TEST(GlobalOrder, RecordMissedOrRepeated) {
  for (uint64_t total : {0, 1, 2, 3, 7, 1000, (1 << 16) + 3}) {
    for (bool uneven : {false, true}) {
      for (ShuffleMode mode : kAllModes) {
        SCOPED_TRACE(::testing::Message() << ShuffleModeName(mode) << " total=" << total
                                          << (uneven ? " uneven shards" : " one shard"));
        std::vector<uint64_t> shards = uneven ? UnevenShards(total) : std::vector{total};
        GlobalOrder order = MakeOrder(shards, mode);
        EXPECT_EQ(order.size(), total);
        ExpectPermutationOfIds(Materialize(order), total);
      }
    }
  }
}

TEST(GlobalOrder, BlockModeRecordMissedOrRepeatedForAnyWindowWidth) {
  const std::vector<uint64_t> shards = UnevenShards(1000);
  for (uint32_t block : {0u, 1u, 2u, 3u, 4u, 7u, 1000u}) {
    SCOPED_TRACE(::testing::Message() << "block_shards=" << block);
    ExpectPermutationOfIds(Materialize(MakeOrder(shards, ShuffleMode::kBlock, 3, 0, block)), 1000);
  }
}

TEST(GlobalOrder, LocateWrongShardWithEmptyShards) {
  const std::vector<uint64_t> shards = {0, 3, 0, 0, 5, 1, 0, 2, 0};
  GlobalOrder order = MakeOrder(shards, ShuffleMode::kGlobal);
  uint64_t id = 0;
  for (uint32_t shard = 0; shard < shards.size(); ++shard) {
    for (uint64_t index = 0; index < shards[shard]; ++index, ++id) {
      RecordLocation loc = order.Locate(id);
      EXPECT_EQ(loc.shard, shard) << "id " << id;
      EXPECT_EQ(loc.index, index) << "id " << id;
    }
  }
  EXPECT_EQ(id, order.size());
}

TEST(GlobalOrder, OrderDependsOnSomethingElseThanInputs) {
  const std::vector<uint64_t> shards = UnevenShards(500);
  for (ShuffleMode mode : {ShuffleMode::kGlobal, ShuffleMode::kBlock}) {
    SCOPED_TRACE(ShuffleModeName(mode));
    const std::vector<uint64_t> base = Materialize(MakeOrder(shards, mode, 11, 2));
    EXPECT_EQ(base, Materialize(MakeOrder(shards, mode, 11, 2)));
    EXPECT_NE(base, Materialize(MakeOrder(shards, mode, 12, 2))) << "seed ignored";
    EXPECT_NE(base, Materialize(MakeOrder(shards, mode, 11, 3))) << "epoch ignored";
  }
}

TEST(GlobalOrder, OrderChangesAcrossPlatforms) {
  // Pinned values: a restore on another machine or build must see the same order. If the
  // construction changes on purpose, saved iterator states become invalid: bump their version.
  GlobalOrder order = MakeOrder({10, 20, 30}, ShuffleMode::kGlobal, 1234, 5);
  std::vector<uint64_t> head;
  for (uint64_t p = 0; p < 8; ++p) head.push_back(order.RecordAt(p));
  EXPECT_EQ(head, (std::vector<uint64_t>{41, 22, 3, 45, 35, 12, 2, 18}));
  GlobalOrder block = MakeOrder({10, 20, 30}, ShuffleMode::kBlock, 1234, 5, 2);
  head.clear();
  for (uint64_t p = 0; p < 8; ++p) head.push_back(block.RecordAt(p));
  EXPECT_EQ(head, (std::vector<uint64_t>{31, 36, 0, 47, 8, 53, 57, 34}));
  EXPECT_EQ(order.snapshot_fingerprint(), 10860996795383868850ULL);
}

TEST(GlobalOrder, FingerprintIgnoresCountsOrAddsNoise) {
  const uint64_t fp = MakeOrder({1, 2}, ShuffleMode::kGlobal, 1).snapshot_fingerprint();
  EXPECT_EQ(fp, MakeOrder({1, 2}, ShuffleMode::kBlock, 2, 9).snapshot_fingerprint())
      << "the fingerprint must depend on the snapshot only, not on seed, epoch or mode";
  EXPECT_NE(fp, MakeOrder({2, 1}, ShuffleMode::kGlobal).snapshot_fingerprint());
  EXPECT_NE(fp, MakeOrder({1, 2, 0}, ShuffleMode::kGlobal).snapshot_fingerprint());
  EXPECT_NE(fp, MakeOrder({3}, ShuffleMode::kGlobal).snapshot_fingerprint());
  EXPECT_NE(MakeOrder({}, ShuffleMode::kGlobal).snapshot_fingerprint(),
            MakeOrder({0}, ShuffleMode::kGlobal).snapshot_fingerprint());
}

TEST(GlobalOrder, NoneAndBufferModesReorderRecords) {
  for (ShuffleMode mode : {ShuffleMode::kNone, ShuffleMode::kBuffer}) {
    GlobalOrder order = MakeOrder({4, 0, 6}, mode);
    for (uint64_t p = 0; p < order.size(); ++p) EXPECT_EQ(order.RecordAt(p), p);
  }
}

// Walks the block-mode order and splits it into windows: a window closes once it has seen
// `block` shards and every record of them. Returns the shard set of each window, or fails if a
// window would need more than `block` shards (records of a window leaking into another).
std::vector<std::set<uint32_t>> BlockWindows(const GlobalOrder& order,
                                             const std::vector<uint64_t>& shards, size_t block) {
  std::vector<std::set<uint32_t>> windows(1);
  uint64_t window_records = 0, consumed = 0;
  for (uint64_t p = 0; p < order.size(); ++p) {
    const uint32_t shard = order.Locate(order.RecordAt(p)).shard;
    std::set<uint32_t>* current = &windows.back();
    if (current->size() == block && consumed == window_records) {
      current = &windows.emplace_back();
      window_records = consumed = 0;
    }
    if (current->insert(shard).second) {
      EXPECT_LE(current->size(), block) << "window reads from too many shards at position " << p;
      window_records += shards[shard];
    }
    ++consumed;
  }
  EXPECT_EQ(consumed, window_records) << "last window is missing records";
  return windows;
}

TEST(GlobalOrder, BlockWindowReadsFromTooManyShards) {
  const std::vector<uint64_t> shards = {5, 9, 1, 7, 3, 8, 2, 6, 4, 10};  // no empty shard
  for (size_t block : {1, 3, 4, 10}) {
    SCOPED_TRACE(::testing::Message() << "block_shards=" << block);
    GlobalOrder order = MakeOrder(shards, ShuffleMode::kBlock, 5, 1, block);
    std::vector<std::set<uint32_t>> windows = BlockWindows(order, shards, block);
    ASSERT_EQ(windows.size(), (shards.size() + block - 1) / block);
    std::set<uint32_t> covered;
    for (size_t w = 0; w < windows.size(); ++w) {
      EXPECT_EQ(windows[w].size(), std::min(block, shards.size() - w * block));
      covered.insert(windows[w].begin(), windows[w].end());
    }
    EXPECT_EQ(covered.size(), shards.size()) << "windows do not cover every shard";
  }
}

TEST(GlobalOrder, BlockModeNeverShufflesShardsOrRecords) {
  const std::vector<uint64_t> shards(8, 50);
  auto shard_sequence = [&](uint64_t epoch) {
    GlobalOrder order = MakeOrder(shards, ShuffleMode::kBlock, 5, epoch, 1);
    std::vector<uint32_t> sequence;
    for (uint64_t p = 0; p < order.size(); p += 50) {
      sequence.push_back(order.Locate(order.RecordAt(p)).shard);
    }
    return sequence;
  };
  EXPECT_NE(shard_sequence(0), shard_sequence(1)) << "shard order is the same every epoch";
  std::vector<uint32_t> in_order(8);
  for (uint32_t s = 0; s < 8; ++s) in_order[s] = s;
  EXPECT_NE(shard_sequence(0), in_order) << "shards are not shuffled";

  GlobalOrder order = MakeOrder(shards, ShuffleMode::kBlock, 5, 0, 1);
  uint64_t in_place = 0;
  for (uint64_t p = 1; p < order.size(); ++p) {
    in_place += order.RecordAt(p) == order.RecordAt(p - 1) + 1;
  }
  EXPECT_LT(in_place, order.size() / 10) << "records inside a window are not shuffled";
}

}  // namespace
}  // namespace sluice::pipeline

// TEMPORARY stand-in for src/pipeline/global_order.cc (branch `order`), so pipeline tests
// link before it lands on main. Trivial math: an affine permutation. Delete on merge.
#include "sluice/pipeline/global_order.h"

#include <algorithm>
#include <numeric>

namespace sluice::pipeline {

std::string_view ShuffleModeName(ShuffleMode mode) {
  switch (mode) {
    case ShuffleMode::kNone: return "none";
    case ShuffleMode::kGlobal: return "global";
    case ShuffleMode::kBlock: return "block";
    case ShuffleMode::kBuffer: return "buffer";
  }
  return "?";
}

Result<ShuffleMode> ParseShuffleMode(std::string_view name) {
  for (ShuffleMode m : {ShuffleMode::kNone, ShuffleMode::kGlobal, ShuffleMode::kBlock,
                        ShuffleMode::kBuffer}) {
    if (ShuffleModeName(m) == name) return m;
  }
  return InvalidArgument("bad shuffle mode");
}

GlobalOrder::GlobalOrder(std::vector<uint64_t> shard_records, OrderOptions options,
                         uint64_t epoch)
    : shard_records_(std::move(shard_records)), options_(options), epoch_(epoch) {
  for (uint64_t n : shard_records_) {
    shard_starts_.push_back(total_);
    total_ += n;
    fingerprint_ = fingerprint_ * 1000003 + n + 1;
  }
}

uint64_t GlobalOrder::RecordAt(uint64_t position) const {
  if (options_.mode == ShuffleMode::kNone || options_.mode == ShuffleMode::kBuffer) return position;
  uint64_t a = 1 + 2 * ((options_.seed * 31 + epoch_ * 17) % 1000);
  while (std::gcd(a, total_) != 1) a += 2;
  uint64_t b = options_.seed * 7 + epoch_ * 13;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * position + b) % total_);
}

RecordLocation GlobalOrder::Locate(uint64_t record_id) const {
  size_t s = static_cast<size_t>(
      std::upper_bound(shard_starts_.begin(), shard_starts_.end(), record_id) -
      shard_starts_.begin() - 1);
  while (shard_records_[s] == 0 || record_id - shard_starts_[s] >= shard_records_[s]) ++s;
  return RecordLocation{static_cast<uint32_t>(s), record_id - shard_starts_[s]};
}

RankSlice::RankSlice(const GlobalOrder* order, ShardingOptions sharding, uint64_t start)
    : order_(order), sharding_(sharding), start_(start) {
  uint64_t n = order->size();
  uint64_t left = start >= n ? 0 : n - start;
  uint64_t w = sharding.world_size;
  size_ = sharding.remainder == Remainder::kDrop ? left / w : (left + w - 1) / w;
}

uint64_t RankSlice::PositionAt(uint64_t k) const {
  uint64_t p = start_ + sharding_.rank + k * sharding_.world_size;
  return p % order_->size();
}

uint64_t RankSlice::GlobalConsumedAfter(uint64_t k) const {
  return std::min(order_->size(), start_ + k * sharding_.world_size);
}

}  // namespace sluice::pipeline

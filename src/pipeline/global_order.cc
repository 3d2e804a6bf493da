#include "sluice/pipeline/global_order.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <utility>

#include "order_keys.h"

namespace sluice::pipeline {
namespace {

// The index i of the last entry with starts[i] <= value, searching starts[first, last).
// `starts` is non-decreasing; equal entries (empty shards) resolve to the last of them, which
// is the one that actually holds `value`.
size_t LastStartAtOrBefore(const std::vector<uint64_t>& starts, size_t first, size_t last,
                           uint64_t value) {
  auto it = std::upper_bound(starts.begin() + first, starts.begin() + last, value);
  return static_cast<size_t>(it - starts.begin()) - 1;
}

// Names of ShuffleMode and Remainder values, indexed by the value (enums numbered from 0).
constexpr std::string_view kShuffleModeNames[] = {"none", "global", "block", "buffer", "chunks"};
constexpr std::string_view kRemainderNames[] = {"drop", "pad", "exact"};

template <typename E, size_t N>
std::string_view NameOf(E value, const std::string_view (&names)[N]) {
  const size_t i = static_cast<size_t>(value);
  return i < N ? names[i] : "unknown";
}

template <typename E, size_t N>
std::optional<E> ValueNamed(std::string_view name, const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view ShuffleModeName(ShuffleMode mode) { return NameOf(mode, kShuffleModeNames); }

Result<ShuffleMode> ParseShuffleMode(std::string_view name) {
  if (auto mode = ValueNamed<ShuffleMode>(name, kShuffleModeNames)) return *mode;
  return InvalidArgument("unknown shuffle mode '" + std::string(name) +
                         "' (expected chunks, global, block, buffer or none)");
}

std::string_view RemainderName(Remainder remainder) { return NameOf(remainder, kRemainderNames); }

Result<Remainder> ParseRemainder(std::string_view name) {
  if (auto r = ValueNamed<Remainder>(name, kRemainderNames)) return *r;
  return InvalidArgument("shard: remainder must be 'drop', 'pad' or 'exact', got '" +
                         std::string(name) + "'");
}

GlobalOrder::GlobalOrder(std::vector<uint64_t> shard_records, OrderOptions options, uint64_t epoch,
                         std::shared_ptr<const std::vector<uint64_t>> chunk_starts)
    : shard_records_(std::move(shard_records)), options_(options), epoch_(epoch) {
  options_.block_shards = std::max<uint32_t>(options_.block_shards, 1);
  const size_t shards = shard_records_.size();
  fingerprint_ = CombineKey(kFingerprintTag, shards);
  shard_starts_.reserve(shards);
  for (uint64_t count : shard_records_) {
    shard_starts_.push_back(total_);
    total_ += count;
    fingerprint_ = CombineKey(fingerprint_, count);
  }

  const uint64_t seed = options_.seed;
  if (options_.mode == ShuffleMode::kGlobal) {
    record_perm_ = Permutation(total_, EpochKey(kGlobalTag, seed, epoch_));
  } else if (options_.mode == ShuffleMode::kBlock) {
    const Permutation shard_order(shards, EpochKey(kShardOrderTag, seed, epoch_));
    shard_perm_.resize(shards);
    block_starts_.resize(shards + 1, 0);
    for (size_t j = 0; j < shards; ++j) {
      shard_perm_[j] = static_cast<uint32_t>(shard_order.Apply(j));
      block_starts_[j + 1] = block_starts_[j] + shard_records_[shard_perm_[j]];
    }
    window_key_ = EpochKey(kWindowTag, seed, epoch_);
  } else if (options_.mode == ShuffleMode::kChunks) {
    options_.lanes = std::max<uint32_t>(options_.lanes, 1);
    options_.lane_window = std::max<uint64_t>(options_.lane_window, 1);
    if (chunk_starts == nullptr) {  // every non-empty shard is one chunk
      auto starts = std::make_shared<std::vector<uint64_t>>();
      for (size_t i = 0; i < shards; ++i) {
        if (shard_records_[i] > 0) starts->push_back(shard_starts_[i]);
      }
      starts->push_back(total_);
      chunk_starts = std::move(starts);
    }
    chunk_order_.emplace(std::move(chunk_starts), seed, epoch_, options_.lanes,
                         options_.lane_window);
  } else if (chunk_starts != nullptr) {
    // Unshuffled (none, buffer): position p is record p; given the snapshot's chunks, the
    // read stage reads them through its chunk cache, in order.
    chunk_order_.emplace(std::move(chunk_starts), ChunkOrder::InOrder{});
  }
}

uint64_t GlobalOrder::RecordAt(uint64_t position) const {
  assert(position < total_);
  switch (options_.mode) {
    case ShuffleMode::kGlobal:
      return record_perm_.Apply(position);
    case ShuffleMode::kBlock:
      return BlockRecordAt(position);
    case ShuffleMode::kChunks:
      return chunk_order_->At(position).record;
    case ShuffleMode::kNone:
    case ShuffleMode::kBuffer:
      break;
  }
  return position;
}

// Shuffled shard j occupies positions [block_starts_[j], block_starts_[j + 1]); window w is
// shuffled shards [w * B, (w + 1) * B). A position's offset inside its window is permuted with
// the window's own key, then mapped back to the shuffled shard and record that hold it.
uint64_t GlobalOrder::BlockRecordAt(uint64_t position) const {
  if (position >= total_) return position;  // caller bug (asserted in RecordAt)
  const size_t shards = shard_perm_.size();
  const size_t block = options_.block_shards;
  const size_t window = LastStartAtOrBefore(block_starts_, 0, shards, position) / block;
  const size_t first = window * block;
  const size_t last = std::min(first + block, shards);
  const uint64_t begin = block_starts_[first];
  const Permutation in_window(block_starts_[last] - begin, CombineKey(window_key_, window));
  const uint64_t shuffled = begin + in_window.Apply(position - begin);
  const size_t j = LastStartAtOrBefore(block_starts_, first, last, shuffled);
  return shard_starts_[shard_perm_[j]] + (shuffled - block_starts_[j]);
}

RecordLocation GlobalOrder::Locate(uint64_t record_id) const {
  assert(record_id < total_);
  if (shard_starts_.empty()) return RecordLocation{0, record_id};
  const size_t shard = LastStartAtOrBefore(shard_starts_, 0, shard_starts_.size(), record_id);
  return RecordLocation{static_cast<uint32_t>(shard), record_id - shard_starts_[shard]};
}

Status ValidateSharding(const ShardingOptions& sharding) {
  if (sharding.world_size == 0) return InvalidArgument("world_size must be at least 1");
  if (sharding.rank >= sharding.world_size) {
    return InvalidArgument("rank " + std::to_string(sharding.rank) + " is not below world_size " +
                           std::to_string(sharding.world_size));
  }
  return Status::OK();
}

RankSlice::RankSlice(const GlobalOrder* order, ShardingOptions sharding, uint64_t start)
    : order_(order), sharding_(sharding), start_(std::min(start, order->size())) {
  if (!ValidateSharding(sharding_).ok()) return;  // empty slice, see ValidateSharding
  const uint64_t remaining = order_->size() - start_;
  const uint64_t world = sharding_.world_size;
  switch (sharding_.remainder) {
    case Remainder::kDrop:
      size_ = remaining / world;
      break;
    case Remainder::kPad:
      size_ = remaining / world + (remaining % world != 0 ? 1 : 0);
      break;
    case Remainder::kExact:
      size_ = remaining / world + (sharding_.rank < remaining % world ? 1 : 0);
      break;
  }
}

// Offsets are taken relative to start_ so that nothing overflows near 2^64. In kPad mode an
// offset past the end of the epoch wraps to the epoch's first positions (position 0, 1, ...),
// which repeats the first records of the epoch; wrapping again handles epochs shorter than W.
uint64_t RankSlice::PositionAt(uint64_t k) const {
  assert(k < size_);
  const uint64_t remaining = order_->size() - start_;
  const uint64_t offset = sharding_.rank + k * sharding_.world_size;
  if (offset < remaining) return start_ + offset;
  return (offset - remaining) % order_->size();
}

uint64_t RankSlice::GlobalConsumedAfter(uint64_t k) const {
  const uint64_t remaining = order_->size() - start_;
  const uint64_t world = sharding_.world_size;
  if (world == 0 || k > remaining / world) return order_->size();
  return start_ + k * world;  // <= start_ + remaining == size()
}

}  // namespace sluice::pipeline

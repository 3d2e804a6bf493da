// The global sample order of an epoch and each rank's slice of it (docs/architecture.md,
// "Global order"). For a snapshot (the record counts of its shards), a seed and an epoch, the order
// is a pure function of them: independent of world size, threads and buffer sizes. Positions
// map to records in O(1) (global mode) or O(log shards) (block mode) with O(1) memory per
// epoch, which is what makes an iterator's state a few bytes and restore O(1).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/pipeline/chunk_order.h"
#include "sluice/pipeline/permutation.h"

namespace sluice::pipeline {

// Numbered as saved in iterator states: never renumber.
enum class ShuffleMode {
  kNone,    // records in shard order
  kGlobal,  // a full pseudo-random permutation of all records per epoch (per-record reads)
  kBlock,   // shards permuted, then records permuted within windows of `block_shards` shards
  kBuffer,  // tf.data-style bounded shuffle buffer over the shard-order stream (a stage, not
            // a permutation: GlobalOrder yields shard order and the buffer stage shuffles)
  kChunks,  // chunks permuted, records permuted within windows of chunks (ChunkOrder): the
            // default of Shuffle(), so that each chunk is fetched and decoded once per window
};

// "none", "global", "block", "buffer", "chunks"
std::string_view ShuffleModeName(ShuffleMode mode);
Result<ShuffleMode> ParseShuffleMode(std::string_view name);

struct OrderOptions {
  ShuffleMode mode = ShuffleMode::kGlobal;  // Default: global
  uint64_t seed = 0;                        // Default: 0
  uint32_t block_shards = 4;                // Default: 4 shards per window (block mode); 0 means 1
  uint32_t lanes = 1;        // chunks mode: L, lanes of the record stream (0 means 1)
  uint64_t lane_window = 1;  // chunks mode: K, chunks per window of a lane (0 means 1)
};

// Where a global record id lives.
struct RecordLocation {
  uint32_t shard = 0;
  uint64_t index = 0;  // record index inside the shard
};

class GlobalOrder {
 public:
  // `shard_records[i]` = records in shard i of the snapshot. Global record ids number the
  // records shard by shard: id = (records of earlier shards) + index in shard. Chunks mode
  // also takes `chunk_starts`: the first global id of every chunk and then the total
  // (ChunkOrder); null: every non-empty shard is one chunk.
  GlobalOrder(std::vector<uint64_t> shard_records, OrderOptions options, uint64_t epoch,
              std::shared_ptr<const std::vector<uint64_t>> chunk_starts = nullptr);

  uint64_t size() const { return total_; }
  uint64_t epoch() const { return epoch_; }
  const OrderOptions& options() const { return options_; }
  // The global record id at `position` (0 <= position < size()).
  uint64_t RecordAt(uint64_t position) const;
  RecordLocation Locate(uint64_t record_id) const;
  // A 64-bit fingerprint of the shard record counts: what iterator states of version 1
  // stored to identify the snapshot (states now store RecordSource::snapshot(), which covers
  // the content; this one is kept to restore version 1 states).
  uint64_t snapshot_fingerprint() const { return fingerprint_; }
  // The chunk order (chunks mode), else null.
  const ChunkOrder* chunk_order() const { return chunk_order_ ? &*chunk_order_ : nullptr; }

 private:
  uint64_t BlockRecordAt(uint64_t position) const;

  std::vector<uint64_t> shard_records_;
  std::vector<uint64_t> shard_starts_;  // prefix sums: first global id of each shard
  OrderOptions options_;
  uint64_t epoch_ = 0;
  uint64_t total_ = 0;
  uint64_t fingerprint_ = 0;
  // The whole permutation state: a few keys (global mode) or O(shards) words (block mode).
  Permutation record_perm_;                // global mode: position -> record id
  std::vector<uint32_t> shard_perm_;       // block mode: shard order for this epoch
  std::vector<uint64_t> block_starts_;     // block mode: prefix sums of shard_perm_'s record
                                           // counts (first position of each shuffled shard + total)
  uint64_t window_key_ = 0;                // block mode: window w is permuted with key (this, w)
  std::optional<ChunkOrder> chunk_order_;  // chunks mode
};

// What a rank does with the records left over when the epoch size is not a multiple of the
// world size (so that every rank yields the same number of samples).
enum class Remainder {
  kDrop,   // Default: the last ((size - start) % world) positions of the epoch are not used
  kPad,    // the epoch is padded by repeating positions from its start (0, 1, ...)
  kExact,  // every position once: the first ((size - start) % world) ranks take one more
           // (evaluation: nothing dropped, nothing repeated; counts differ by at most one)
};
std::string_view RemainderName(Remainder remainder);  // "drop", "pad", "exact"
Result<Remainder> ParseRemainder(std::string_view name);

struct ShardingOptions {
  uint32_t rank = 0;        // Default: 0
  uint32_t world_size = 1;  // Default: 1
  Remainder remainder = Remainder::kDrop;
};

// InvalidArgument unless world_size >= 1 and rank < world_size. A RankSlice built from invalid
// options is empty (size() == 0) rather than undefined.
Status ValidateSharding(const ShardingOptions& sharding);

// Rank r's slice of an epoch's order, starting at global position `start` (the number of
// positions all ranks together had consumed before: 0 for a fresh epoch, other values after an
// elastic restore; clamped to the order's size). Rank r takes positions start + r,
// start + r + W, ... so that a restore with another W continues the epoch with no sample missed
// or repeated. See docs/order.md.
class RankSlice {
 public:
  RankSlice(const GlobalOrder* order, ShardingOptions sharding, uint64_t start = 0);
  // Samples this rank yields from `start` to the end of the epoch (equal for all ranks,
  // except with kExact: one more for the first (size - start) % world ranks).
  uint64_t size() const { return size_; }
  // The epoch position of this rank's k-th sample (0 <= k < size()): p = start + rank + k * W;
  // in kPad mode a p past the end of the epoch wraps to p - order size (modulo order size), so
  // padding repeats the epoch's first positions.
  uint64_t PositionAt(uint64_t k) const;
  uint64_t RecordAt(uint64_t k) const { return order_->RecordAt(PositionAt(k)); }
  // Global positions consumed by all ranks once every rank has taken k samples:
  // min(start + k * W, order size). Pass it as `start` to restore onto any world size.
  uint64_t GlobalConsumedAfter(uint64_t k) const;
  uint64_t start() const { return start_; }
  const ShardingOptions& sharding() const { return sharding_; }

 private:
  const GlobalOrder* order_;
  ShardingOptions sharding_;
  uint64_t start_ = 0;
  uint64_t size_ = 0;
};

}  // namespace sluice::pipeline

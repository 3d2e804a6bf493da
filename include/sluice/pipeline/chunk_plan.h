// The chunks a rank will read in an epoch, in the order it will need them (docs/order.md,
// "The chunk plan"). The chunk-aware order knows its future: the pipeline's decoded-chunk
// cache fetches and decodes along it, and a remote read-ahead or a node-local cache tier can
// follow the same sequence (prefetch what comes next, evict what no window needs any more).
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/format/shard_chunks.h"
#include "sluice/pipeline/global_order.h"
#include "sluice/pipeline/source.h"

namespace sluice::pipeline {

// The chunks of a snapshot numbered shard by shard (global chunk ids), as the chunk order
// and the chunk cache see them. Built once per read stage from RecordSource::chunks().
class SnapshotChunks {
 public:
  // InvalidArgument when a shard's chunks do not tile its records in order.
  static Result<std::shared_ptr<const SnapshotChunks>> Of(const RecordSource& source);

  uint64_t size() const { return starts_->size() - 1; }
  // First global record id of each chunk, then the total: what ChunkOrder takes.
  const std::shared_ptr<const std::vector<uint64_t>>& starts() const { return starts_; }
  uint32_t ShardOf(uint64_t chunk) const;
  // Where global record id `record` of `chunk` is: GlobalOrder::Locate in O(1).
  RecordLocation Locate(uint64_t chunk, uint64_t record) const {
    return RecordLocation{chunk_shard_[chunk], chunk_index_[chunk] + (record - (*starts_)[chunk])};
  }
  const format::ShardChunk& Info(uint64_t chunk) const;
  uint64_t decoded_bytes() const { return decoded_bytes_; }  // of all chunks
  uint64_t largest_decoded_bytes() const { return largest_decoded_bytes_; }

 private:
  const RecordSource* source_ = nullptr;
  std::shared_ptr<const std::vector<uint64_t>> starts_;
  std::vector<uint64_t> shard_first_chunk_;  // per shard, then the total
  std::vector<uint32_t> chunk_shard_;        // per chunk, its shard
  std::vector<uint64_t> chunk_index_;        // per chunk, its first record's index in the shard
  uint64_t decoded_bytes_ = 0;
  uint64_t largest_decoded_bytes_ = 0;
};

// One chunk a rank needs.
struct ChunkNeed {
  uint64_t chunk = 0;  // global chunk id (SnapshotChunks)
  uint32_t shard = 0;  // RecordSource::shard_name(shard) names the file
  // Its bytes in the shard file ([file_offset, file_offset + file_bytes)), records and
  // decoded size (RecordSource::chunks(shard)).
  format::ShardChunk info;
  // The rank's samples (RankSlice indices k) of the window that needs it: from first_sample
  // on the chunk is needed (its records come in random order within the window), after
  // last_sample this need is over. A chunk cut by a lane boundary is needed by two windows
  // and appears twice.
  uint64_t first_sample = 0;
  uint64_t last_sample = 0;
};

// Lists, for one rank, the chunks an epoch of the chunk order needs from sample `from` on,
// ordered by first_sample (ties: window by window, slot order inside one). Lazy: O(lanes)
// memory, O(log lanes) per window. Covers the positions the rank's slice takes inside the
// epoch; padding (Remainder::kPad) past the end is not listed. With W not dividing L a rank
// reads only part of each window's records; the plan lists the whole window.
class ChunkPlan {
 public:
  // `order` must be in chunks mode and built on `chunks`; `sharding` and `start` as for
  // RankSlice (start: the global position the rank slice starts at).
  ChunkPlan(std::shared_ptr<const GlobalOrder> order, std::shared_ptr<const SnapshotChunks> chunks,
            ShardingOptions sharding, uint64_t start, uint64_t from = 0);

  // The next need; false when the epoch needs no more.
  bool Next(ChunkNeed* need);

 private:
  struct Pending {  // a lane's next window with rank samples
    uint64_t first_sample;
    uint32_t lane;
    uint64_t window;
    bool operator>(const Pending& o) const {
      return std::pair(first_sample, lane) > std::pair(o.first_sample, o.lane);
    }
  };
  // Queues lane `lane`'s first window at or after `window` that holds a sample >= from_.
  void QueueLane(uint32_t lane, uint64_t window);
  // The rank samples [first, last] of window `w`; false when it holds none.
  bool SamplesOf(const ChunkOrder::Window& w, uint64_t* first, uint64_t* last) const;

  std::shared_ptr<const GlobalOrder> order_;
  std::shared_ptr<const SnapshotChunks> chunks_;
  RankSlice slice_;
  uint64_t from_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> lanes_;
  ChunkOrder::Window current_;
  uint64_t next_slot_ = 0;  // in current_
  uint64_t current_first_ = 0;
  uint64_t current_last_ = 0;
};

}  // namespace sluice::pipeline

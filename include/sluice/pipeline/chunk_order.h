// The chunk-aware order of an epoch (docs/order.md, "Chunks mode"): the default order for
// shard files. Chunks (runs of records that decode together, format/shard_chunks.h) are
// permuted; the resulting stream of records is cut into L *lanes* of equal length; each lane
// is cut into *windows* of K consecutive chunk pieces, and the records of a window are
// permuted within it; position p is record q = p / L of lane p % L. So:
//   * a reader decodes each chunk once per window, holding ~L x K chunks at a time (for one
//     rank; W ranks with W dividing L hold L x K / W each);
//   * positions congruent modulo W fall on lanes congruent modulo W: when W divides L, the
//     ranks of RankSlice read disjoint sets of chunks (only the <= L - 1 chunks cut by a lane
//     boundary are read by two ranks), while "consumed = a prefix of positions" still holds,
//     so restore onto any W stays exact (elastic);
//   * it is a pure function of (chunk record counts, seed, epoch, L, K).
// Position -> record is O(log chunks); building an epoch is O(chunks) (a permutation of the
// chunks and the prefix sums of their records), memory 12 bytes per chunk.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "sluice/base/fast_divide.h"
#include "sluice/pipeline/permutation.h"

namespace sluice::pipeline {

class ChunkOrder {
 public:
  // `chunk_starts`: the first global record id of every chunk, then the total (strictly
  // increasing: every chunk has a record). `lanes` and `lane_window` are L and K (0 means 1).
  ChunkOrder(std::shared_ptr<const std::vector<uint64_t>> chunk_starts, uint64_t seed,
             uint64_t epoch, uint32_t lanes, uint64_t lane_window);
  // The records in their stored order (position p is record p), chunk after chunk: one
  // lane, windows of one chunk. What the unshuffled modes read through the chunk cache.
  struct InOrder {};
  ChunkOrder(std::shared_ptr<const std::vector<uint64_t>> chunk_starts, InOrder);
  bool in_order() const { return in_order_; }

  uint64_t size() const { return total_; }
  uint64_t chunks() const { return slot_chunk_.size(); }
  uint32_t lanes() const { return lanes_; }
  uint64_t lane_window() const { return lane_window_; }
  // Position p is lane position p / lanes() of lane p % lanes() (a multiply, not a division:
  // a shuffled read asks for every record).
  struct LanePosition {
    uint32_t lane = 0;
    uint64_t q = 0;
  };
  LanePosition Split(uint64_t position) const {
    const uint64_t q = lanes_div_.Divide(position);
    return {static_cast<uint32_t>(position - q * lanes_), q};
  }

  struct Place {
    uint64_t record = 0;  // global record id
    uint64_t chunk = 0;   // the chunk holding it
  };
  // The record at `position` (< size()).
  Place At(uint64_t position) const;


  // Window `index` of lane `lane`: the chunk slots [first_slot, end_slot) of the epoch's
  // chunk permutation (ChunkInSlot) and the lane positions [first, end) whose records come
  // from them; lane position q is global position q * lanes() + lane.
  struct Window {
    uint32_t lane = 0;
    uint64_t index = 0;
    uint64_t first_slot = 0;
    uint64_t end_slot = 0;
    uint64_t first = 0;
    uint64_t end = 0;
  };
  uint64_t LaneLength(uint32_t lane) const;
  uint64_t WindowsInLane(uint32_t lane) const;
  Window LaneWindow(uint32_t lane, uint64_t index) const;
  // The window holding `position` (< size()).
  Window WindowAt(uint64_t position) const;
  uint64_t ChunkInSlot(uint64_t slot) const { return slot_chunk_[slot]; }

  // At() for a run of positions that fall in a few windows (a rank's next samples): keeps
  // the last window of up to kCachedLanes lanes with its record permutation, so a position
  // in one of them costs the permutation and a search among the window's chunks only (a
  // run of a rank's positions cycles through the lanes). One per thread.
  class Placer {
   public:
    static constexpr uint32_t kCachedLanes = 64;
    explicit Placer(const ChunkOrder& order);
    Place At(uint64_t position);
    // At() of each of positions[0, n) into out[0, n): the records' permutations of a few
    // dozen positions at a time run together (Permutation::ApplyMany). With `windows`, the
    // index of each position's window in its lane into windows[0, n); with `lanes`, each
    // position's lane into lanes[0, n).
    void AtMany(const uint64_t* positions, size_t n, Place* out, uint64_t* windows = nullptr,
                uint32_t* lanes = nullptr);
    // Whether the positions placed last in `lane` were past its window `index` (false when
    // this placer has not placed a position of the lane since): a reader is done with that
    // window's chunks.
    bool PastWindow(uint32_t lane, uint64_t index) const;

   private:
    struct Cached {
      bool valid = false;
      uint64_t piece = 0;  // AtMany's piece that used it last
      uint8_t group = 0;   // its place among that piece's windows
      Window window;
      Permutation records;  // the window's record permutation
    };
    // The cached window of `position`'s lane, filled if it holds another window; nullptr
    // instead of refilling an entry that piece `piece` uses already.
    Cached* WindowOf(uint64_t position, LanePosition at, uint64_t piece);

    const ChunkOrder* order_;
    std::vector<Cached> cached_;  // by lane % size (min(lanes, kCachedLanes) entries)
    uint64_t pieces_ = 0;         // pieces started (0: none)
  };

 private:
  // Stream offset -> slot: the last slot whose first stream offset is <= t, among [first, last).
  uint64_t SlotOf(uint64_t t, uint64_t first, uint64_t last) const;
  uint64_t LaneBegin(uint32_t lane) const;  // stream offset of the lane's first record
  Permutation RecordsIn(const Window& w) const;  // the window's record permutation
  // The slots, lanes and their first and last slots; slot j holds chunk chunk_in_slot(j).
  template <typename ChunkInSlotFn>
  void Build(ChunkInSlotFn chunk_in_slot);
  // The record at lane position q of window w, whose record permutation is `records`.
  Place PlaceIn(const Window& w, const Permutation& records, uint64_t q) const;
  // The record at place `shuffled` of window w's records (their permutation applied).
  Place PlaceAt(const Window& w, uint64_t shuffled) const;

  std::shared_ptr<const std::vector<uint64_t>> chunk_starts_;
  uint64_t total_ = 0;
  uint32_t lanes_ = 1;
  FastDivider lanes_div_;    // divides by lanes_
  uint64_t lane_base_ = 0;   // total_ / lanes_: a lane's length, and
  uint64_t lane_extra_ = 0;  // total_ % lanes_: the lanes (the first ones) one record longer
  uint64_t lane_window_ = 1;
  uint64_t window_key_ = 0;
  bool in_order_ = false;
  std::vector<uint32_t> slot_chunk_;     // slot j holds chunk slot_chunk_[j]
  std::vector<uint64_t> slot_starts_;    // stream offset of slot j's first record; + total
  std::vector<uint64_t> lane_slot_;      // first slot of each lane (its first piece)
  std::vector<uint64_t> lane_end_slot_;  // one past each lane's last slot
};

// How chunks mode sizes its lanes and windows (docs/order.md, "Lanes and window size").
struct ChunkWindowOptions {
  // Total window (all lanes) in decoded bytes or in chunks; 0 and 0: from the memory budget.
  uint64_t window_bytes = 0;
  uint64_t window_chunks = 0;  // wins over window_bytes when both are set
  uint32_t lanes = 0;          // L; 0: the default for the snapshot (DefaultLanes)
};
struct ChunkWindow {
  uint32_t lanes = 1;
  uint64_t lane_window = 1;  // K: chunks per window of a lane
};
// Bytes of decoded chunks a read stage's cache admits: half the pipeline's memory budget.
inline uint64_t ChunkCacheCapacity(uint64_t memory_budget_bytes) { return memory_budget_bytes / 2; }
// The largest of 1, 2, 4, 8, 24, 48, 240, 960, 3840 that is at most max(1, chunks / 10) and,
// unless 1, at most cache_chunks - 1 (each lane needs a window of at least one chunk, and
// the cache one spare lane window to decode ahead).
uint32_t DefaultLanes(uint64_t chunks, uint64_t cache_chunks);
// L and K for a snapshot of `chunks` chunks holding `decoded_bytes` in all, a cache of
// `capacity_bytes`, and the user's requests. cache_chunks = capacity / mean chunk size
// (unbounded when sizes are unknown, 0). K = window_chunks / L, or window_bytes / mean / L
// (rounded up), else cache_chunks / (L + 1); at least 1, at most `chunks`.
ChunkWindow ResolveChunkWindow(uint64_t chunks, uint64_t decoded_bytes, uint64_t capacity_bytes,
                               const ChunkWindowOptions& request);

}  // namespace sluice::pipeline

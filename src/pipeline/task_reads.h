// TaskReads: the reads of one task of the read stage (read.cc), in chunks mode from the
// ChunkCache with the records' places and bytes prefetched ahead. Internal to the pipeline.
#pragma once

#include <algorithm>
#include <bit>
#include <optional>
#include <string>
#include <vector>

#include "chunk_cache.h"
#include "nodes.h"

namespace sluice::pipeline {

// The reads of one task (ReadIterator::Work on a run of elements). Every element is located
// first, in a loop of its own (the order's permutations of neighbouring positions overlap in
// the CPU), in chunks mode through a ChunkOrder::Placer (the run's positions fall in a few
// windows); then read, in chunks mode from the ChunkCache. A shuffled read is two memory
// misses (the record's place in its decoded chunk, then the record), so the reads prefetch
// both for the elements a few places ahead; that takes their chunks from the cache ahead.
// It holds up to `max_held` chunks (rounded down to a power of two), each in the place of its
// number modulo their count, and the read stage keeps it from one task to the next (a window
// draws a task's records from dozens of chunks: a chunk is taken from the cache about once
// per window, not once per task). A held chunk whose window its placer has moved past is let
// go at the next run; the memory budget counts a held chunk the cache let go: see
// MaxHeldChunks.
class TaskReads {
 public:
  static constexpr size_t kPrefetchPlace = 12;  // elements ahead: the record's place
  static constexpr size_t kPrefetchRecord = 6;  // and its bytes, once the place is in cache
  static constexpr size_t kMaxHeld = 256;       // > kPrefetchPlace (else no prefetch)

  TaskReads(const GlobalOrder& order, const SnapshotChunks* chunks, ChunkCache* cache,
            const RecordSource& source, size_t max_held)
      : order_(order), chunks_(chunks), cache_(cache), source_(source) {
    if (cache_ != nullptr && order_.chunk_order() != nullptr) {
      placer_.emplace(*order_.chunk_order());
      // A power of two: a chunk's place is a mask of its number, not a division.
      held_.resize(std::bit_floor(std::clamp<size_t>(max_held, 1, kMaxHeld)));
      held_mask_ = held_.size() - 1;
      // In order (the unshuffled modes) the reads walk each chunk forward: the hardware's
      // prefetcher follows them, and the hints cost ~9% of such a read's CPU.
      prefetch_ = held_.size() > kPrefetchPlace && !order_.chunk_order()->in_order();
    }
  }

  // Sets the shard and index of elems[0, n) from their positions.
  void LocateAll(std::vector<Element>& elems, size_t n) {
    chunk_of_.resize(n);
    index_of_.resize(n);
    next_ = 0;
    if (placer_) {
      positions_.resize(n);
      places_.resize(n);
      window_of_.resize(n);
      lane_of_.resize(n);
      for (size_t i = 0; i < n; ++i) positions_[i] = elems[i].id.position;
      placer_->AtMany(positions_.data(), n, places_.data(), window_of_.data(), lane_of_.data());
      LetGoPastWindows();
    }
    for (size_t i = 0; i < n; ++i) {
      RecordId& id = elems[i].id;
      RecordLocation loc;
      if (placer_) {
        const ChunkOrder::Place p = places_[i];
        chunk_of_[i] = p.chunk;
        loc = chunks_->Locate(p.chunk, p.record);
      } else {
        loc = order_.Locate(order_.RecordAt(id.position));
      }
      id.shard = loc.shard;
      id.index = loc.index;
      index_of_[i] = loc.index;
    }
  }

  // The record of the next element of LocateAll's run (each is read once, in order), from the
  // cache in chunks mode, else on its own.
  Result<ByteView> ReadNext(const RecordId& id, std::string* scratch) {
    const size_t k = next_++;
    if (!placer_) return source_.Read(id.shard, id.index, scratch);
    if (prefetch_) {
      if (k == 0) {  // the run's first elements
        for (size_t a = 0; a < kPrefetchPlace; ++a) Prefetch(a, /*record=*/false);
        for (size_t a = 0; a < kPrefetchRecord; ++a) Prefetch(a, /*record=*/true);
      }
      Prefetch(k + kPrefetchPlace, /*record=*/false);
      Prefetch(k + kPrefetchRecord, /*record=*/true);
    }
    Status error;
    const Held* h = HeldFor(k, &error);
    if (h == nullptr) return error;
    ByteView record;
    if (format::IntactRecordInChunk(*h->data, id.index - h->info->first_record, &record)) {
      return record;
    }
    return source_.ReadInChunk(id.shard, id.index, *h->info, *h->data, scratch);
  }

 private:
  struct Held {
    uint64_t chunk = UINT64_MAX;
    ChunkCache::Handle data;
    const format::ShardChunk* info = nullptr;
    uint32_t lane = 0;  // the window it was last taken for
    uint64_t window = 0;
  };

  // Lets go of the held chunks of windows the placer has moved past (the cache lets them go
  // when the consumer is past them; a reader holding them would keep them in memory).
  void LetGoPastWindows() {
    for (Held& h : held_) {
      if (h.chunk != UINT64_MAX && placer_->PastWindow(h.lane, h.window)) h = Held();
    }
  }

  // Element k's chunk, held, in the place of its number masked by the places' count
  // (direct-mapped: a window's chunks, drawn at random, are found in one look; a chunk whose
  // place another took is taken again from the cache); null when the cache fails (*error,
  // when given).
  [[gnu::always_inline]] Held* Holding(size_t k, Status* error) {
    const uint64_t chunk = chunk_of_[k];
    Held* h = &held_[chunk & held_mask_];
    if (h->chunk != chunk && !Take(k, h, error)) return nullptr;
    return h;
  }
  // Holding, for element k's read: k's window is the latest its chunk was used for.
  [[gnu::always_inline]] Held* HeldFor(size_t k, Status* error) {
    Held* h = Holding(k, error);
    if (h != nullptr) {
      h->lane = lane_of_[k];
      h->window = window_of_[k];
    }
    return h;
  }
  // Takes element k's chunk from the cache into *h, for k's window (Holding's miss path,
  // out of line).
  [[gnu::noinline]] bool Take(size_t k, Held* h, Status* error) {
    *h = Held();  // first: the Get below may fail
    const uint64_t chunk = chunk_of_[k];
    Result<ChunkCache::Handle> data = cache_->Get(chunk);
    if (!data.ok()) {
      if (error != nullptr) *error = data.status();
      return false;
    }
    h->data = *std::move(data);
    h->chunk = chunk;
    h->info = &chunks_->Info(chunk);
    h->lane = lane_of_[k];
    h->window = window_of_[k];
    return true;
  }

  // A hint for element k's read: its place in the decoded chunk, or (record) its framed
  // bytes there: their start and their end, whose CRC the read checks first (a small record
  // mostly straddles two cache lines). Takes the chunk ahead of the read (an error is left
  // to the read).
  void Prefetch(size_t k, bool record) {
    if (k >= chunk_of_.size()) return;
    const Held* h = Holding(k, nullptr);  // the read of element k records its window
    if (h == nullptr) return;
    const format::DecodedChunk& d = *h->data;
    const uint64_t j = index_of_[k] - h->info->first_record;
    if (j >= d.records.size()) return;
    if (!record) {
      __builtin_prefetch(&d.records[j]);
    } else if (const format::DecodedChunk::Located at = d.records[j];
               at.last_byte() < d.bytes.size()) {
      __builtin_prefetch(d.bytes.data() + at.offset);
      __builtin_prefetch(d.bytes.data() + at.last_byte());
    }
  }

  const GlobalOrder& order_;
  const SnapshotChunks* chunks_;
  ChunkCache* cache_;
  const RecordSource& source_;
  std::optional<ChunkOrder::Placer> placer_;  // chunks mode, reading from the cache
  std::vector<uint64_t> positions_;           // chunks mode: the run's positions
  std::vector<ChunkOrder::Place> places_;     // and their places (Placer::AtMany)
  std::vector<uint64_t> window_of_;           // and their windows' indexes in their lanes
  std::vector<uint32_t> lane_of_;             // and their lanes
  std::vector<uint64_t> chunk_of_;            // chunks mode: per element of the run
  std::vector<uint64_t> index_of_;            // the record's index in its shard
  size_t next_ = 0;                           // ReadNext's element
  std::vector<Held> held_;                    // chunks mode: chunk c in place c & held_mask_
  uint64_t held_mask_ = 0;                    // held_.size() - 1 (a power of two)
  bool prefetch_ = false;
};

// Chunks a reader may hold (TaskReads; `tasks`: the readers). The memory they add is that of
// held chunks the cache has let go: when the order's window fits the cache (`window_fits`:
// the default window), mostly those of windows ended since the reader last ran (it lets them
// go when it runs again; the read stage uses its readers in turn), and the readers together
// hold at most half the cache's capacity; when it does not (an explicit window above the
// budget) the cache evicts chunks of the window itself, and they hold at most an eighth of
// its capacity. One: no read-ahead.
inline size_t MaxHeldChunks(uint64_t capacity_bytes, uint64_t largest_chunk_bytes, size_t tasks,
                            bool window_fits) {
  return static_cast<size_t>(
      capacity_bytes / (window_fits ? 2 : 8) /
      std::max<uint64_t>(1, largest_chunk_bytes * std::max<size_t>(1, tasks)));
}

}  // namespace sluice::pipeline

// ChunkOrder: chunks permuted, the record stream cut into lanes, lanes into windows of
// chunks, records permuted within a window (docs/order.md, "Chunks mode").
#include "sluice/pipeline/chunk_order.h"

#include <algorithm>
#include <bit>
#include <cassert>

#include "order_keys.h"

namespace sluice::pipeline {

ChunkOrder::ChunkOrder(std::shared_ptr<const std::vector<uint64_t>> chunk_starts, uint64_t seed,
                       uint64_t epoch, uint32_t lanes, uint64_t lane_window)
    : chunk_starts_(std::move(chunk_starts)),
      lanes_(std::max<uint32_t>(lanes, 1)),
      lanes_div_(lanes_),
      lane_window_(std::max<uint64_t>(lane_window, 1)),
      window_key_(EpochKey(kLaneWindowTag, seed, epoch)) {
  const uint64_t chunks = chunk_starts_->empty() ? 0 : chunk_starts_->size() - 1;
  const Permutation perm(chunks, EpochKey(kChunksTag, seed, epoch));
  Build([&](uint64_t j) { return perm.Apply(j); });
}

ChunkOrder::ChunkOrder(std::shared_ptr<const std::vector<uint64_t>> chunk_starts, InOrder)
    : chunk_starts_(std::move(chunk_starts)), in_order_(true) {
  Build([](uint64_t j) { return j; });
}

template <typename ChunkInSlotFn>
void ChunkOrder::Build(ChunkInSlotFn chunk_in_slot) {
  const std::vector<uint64_t>& starts = *chunk_starts_;
  const uint64_t chunks = starts.empty() ? 0 : starts.size() - 1;
  total_ = starts.empty() ? 0 : starts.back();
  lane_base_ = total_ / lanes_;
  lane_extra_ = total_ % lanes_;
  slot_chunk_.resize(chunks);
  slot_starts_.resize(chunks + 1, 0);
  for (uint64_t j = 0; j < chunks; ++j) {
    const uint64_t c = chunk_in_slot(j);
    slot_chunk_[j] = static_cast<uint32_t>(c);
    slot_starts_[j + 1] = slot_starts_[j] + (starts[c + 1] - starts[c]);
  }
  lane_slot_.resize(lanes_, 0);
  lane_end_slot_.resize(lanes_, 0);
  for (uint32_t l = 0; l < lanes_; ++l) {
    const uint64_t n = LaneLength(l);
    if (n == 0) continue;
    lane_slot_[l] = SlotOf(LaneBegin(l), 0, chunks);
    lane_end_slot_[l] = SlotOf(LaneBegin(l) + n - 1, lane_slot_[l], chunks) + 1;
  }
}

uint64_t ChunkOrder::SlotOf(uint64_t t, uint64_t first, uint64_t last) const {
  // Every caller's range starts at or before t. Branch-free halving (conditional moves): a
  // shuffled read searches its window's slots per record, and which half holds a random
  // record cannot be predicted.
  assert(first < last && slot_starts_[first] <= t);
  const uint64_t* base = slot_starts_.data() + first;
  for (uint64_t n = last - first; n > 1;) {
    const uint64_t half = n / 2;
    base = base[half] <= t ? base + half : base;
    n -= half;
  }
  return static_cast<uint64_t>(base - slot_starts_.data());
}

uint64_t ChunkOrder::LaneBegin(uint32_t lane) const {
  return lane * lane_base_ + std::min<uint64_t>(lane, lane_extra_);
}

uint64_t ChunkOrder::LaneLength(uint32_t lane) const {
  return lane_base_ + (lane < lane_extra_ ? 1 : 0);
}

uint64_t ChunkOrder::WindowsInLane(uint32_t lane) const {
  const uint64_t pieces = lane_end_slot_[lane] - lane_slot_[lane];  // 0 for an empty lane
  return (pieces + lane_window_ - 1) / lane_window_;
}

ChunkOrder::Window ChunkOrder::LaneWindow(uint32_t lane, uint64_t index) const {
  const uint64_t begin = LaneBegin(lane);
  const uint64_t end = begin + LaneLength(lane);
  Window w;
  w.lane = lane;
  w.index = index;
  w.first_slot = lane_slot_[lane] + index * lane_window_;
  w.end_slot = std::min(w.first_slot + lane_window_, lane_end_slot_[lane]);
  w.first = std::max(slot_starts_[w.first_slot], begin) - begin;
  w.end = std::min(slot_starts_[w.end_slot], end) - begin;
  return w;
}

ChunkOrder::Window ChunkOrder::WindowAt(uint64_t position) const {
  const auto [lane, q] = Split(position);
  const uint64_t slot = SlotOf(LaneBegin(lane) + q, lane_slot_[lane], chunks());
  return LaneWindow(lane, (slot - lane_slot_[lane]) / lane_window_);
}

ChunkOrder::Place ChunkOrder::At(uint64_t position) const {
  assert(position < total_);
  const Window w = WindowAt(position);
  return PlaceIn(w, RecordsIn(w), Split(position).q);
}

Permutation ChunkOrder::RecordsIn(const Window& w) const {
  if (in_order_) return Permutation();  // unused: PlaceIn keeps the window's order
  return Permutation(w.end - w.first, CombineKey(CombineKey(window_key_, w.lane), w.index));
}

ChunkOrder::Place ChunkOrder::PlaceIn(const Window& w, const Permutation& records,
                                      uint64_t q) const {
  return PlaceAt(w, in_order_ ? q - w.first : records.Apply(q - w.first));
}

ChunkOrder::Place ChunkOrder::PlaceAt(const Window& w, uint64_t shuffled) const {
  const uint64_t t = LaneBegin(w.lane) + w.first + shuffled;
  const uint64_t slot = SlotOf(t, w.first_slot, w.end_slot);
  const uint64_t chunk = slot_chunk_[slot];
  return Place{(*chunk_starts_)[chunk] + (t - slot_starts_[slot]), chunk};
}

ChunkOrder::Placer::Placer(const ChunkOrder& order)
    : order_(&order), cached_(std::min(order.lanes_, kCachedLanes)) {}

ChunkOrder::Placer::Cached* ChunkOrder::Placer::WindowOf(uint64_t position, LanePosition at,
                                                          uint64_t piece) {
  assert(position < order_->total_);
  const auto [lane, q] = at;
  // lane % cached_.size(): the size is the lane count, or kCachedLanes (a power of two).
  static_assert(std::has_single_bit(kCachedLanes));
  Cached& c = cached_[lane < cached_.size() ? lane : lane & (kCachedLanes - 1)];
  if (!c.valid || c.window.lane != lane || q < c.window.first || q >= c.window.end) {
    if (c.valid && c.piece == piece) return nullptr;
    c.window = order_->WindowAt(position);
    c.records = order_->RecordsIn(c.window);
    c.valid = true;
  }
  return &c;
}

bool ChunkOrder::Placer::PastWindow(uint32_t lane, uint64_t index) const {
  const Cached& c = cached_[lane % cached_.size()];
  return c.valid && c.window.lane == lane && c.window.index > index;
}

ChunkOrder::Place ChunkOrder::Placer::At(uint64_t position) {
  const LanePosition at = order_->Split(position);
  const Cached& c = *WindowOf(position, at, ++pieces_);  // a piece of its own: never refused
  return order_->PlaceIn(c.window, c.records, at.q);
}

void ChunkOrder::Placer::AtMany(const uint64_t* positions, size_t n, Place* out,
                                uint64_t* windows, uint32_t* lanes) {
  // A piece's windows are at most the placer's cached ones (kCachedLanes: a group's number
  // fits a byte); its positions, up to 256, share each window's permutation among dozens
  // (ApplyMany runs ~1.3 passes of the network per value on many, ~2.9 on eight).
  constexpr size_t kPiece = 256;
  static_assert(kCachedLanes <= 256);
  uint64_t offsets[kPiece];      // lane position - window start, then permuted
  Cached* window_of[kPiece];     // the cached window of each
  Cached* groups[kPiece];        // the piece's windows, in first use
  uint16_t starts[kPiece + 1];   // the piece's positions by window: where each window's start
  uint8_t by_group[kPiece];      // the piece's positions (< kPiece), by window
  uint64_t batch[kPiece];
  for (size_t begin = 0; begin < n;) {
    // A piece: positions whose windows are cached together (an entry is refilled only
    // between pieces, never under a position already taken).
    const uint64_t piece = ++pieces_;
    size_t num_groups = 0;
    size_t end = begin;
    for (; end < n && end - begin < kPiece; ++end) {
      const LanePosition at = order_->Split(positions[end]);
      Cached* c = WindowOf(positions[end], at, piece);
      if (c == nullptr) break;
      if (c->piece != piece) {  // its first position in this piece
        c->piece = piece;
        c->group = static_cast<uint8_t>(num_groups);
        groups[num_groups++] = c;
      }
      const size_t j = end - begin;
      window_of[j] = c;
      offsets[j] = at.q - c->window.first;
      if (windows != nullptr) windows[end] = c->window.index;
      if (lanes != nullptr) lanes[end] = at.lane;
    }
    const size_t m = end - begin;
    if (!order_->in_order_) {
      // The positions grouped by window (a counting sort), then each window's record
      // permutation on its positions at once.
      std::fill(starts, starts + num_groups + 1, 0);
      for (size_t j = 0; j < m; ++j) ++starts[window_of[j]->group + 1];
      for (size_t g = 0; g < num_groups; ++g) starts[g + 1] += starts[g];
      uint16_t next[kPiece];
      std::copy(starts, starts + num_groups, next);
      for (size_t j = 0; j < m; ++j) by_group[next[window_of[j]->group]++] = static_cast<uint8_t>(j);
      for (size_t g = 0; g < num_groups; ++g) {
        const size_t from = starts[g], to = starts[g + 1];
        for (size_t k = from; k < to; ++k) batch[k - from] = offsets[by_group[k]];
        groups[g]->records.ApplyMany(batch, to - from);
        for (size_t k = from; k < to; ++k) offsets[by_group[k]] = batch[k - from];
      }
    }
    for (size_t j = 0; j < m; ++j) out[begin + j] = order_->PlaceAt(window_of[j]->window, offsets[j]);
    begin = end;
  }
}

}  // namespace sluice::pipeline

namespace sluice::pipeline {

uint32_t DefaultLanes(uint64_t chunks, uint64_t cache_chunks) {
  static constexpr uint32_t kCandidates[] = {1, 2, 4, 8, 24, 48, 240, 960, 3840};
  uint32_t lanes = 1;
  for (uint32_t l : kCandidates) {
    if (l <= std::max<uint64_t>(1, chunks / 10) && (l == 1 || l + 1 <= cache_chunks)) lanes = l;
  }
  return lanes;
}

ChunkWindow ResolveChunkWindow(uint64_t chunks, uint64_t decoded_bytes, uint64_t capacity_bytes,
                               const ChunkWindowOptions& request) {
  const uint64_t mean = chunks == 0 ? 0 : (decoded_bytes + chunks - 1) / chunks;
  const uint64_t cache_chunks =
      mean == 0 ? UINT64_MAX : std::max<uint64_t>(1, capacity_bytes / mean);
  ChunkWindow w;
  w.lanes = request.lanes > 0 ? request.lanes : DefaultLanes(chunks, cache_chunks);
  const uint64_t lanes = w.lanes;
  uint64_t k = 0;
  if (request.window_chunks > 0) {
    k = (request.window_chunks + lanes - 1) / lanes;
  } else if (request.window_bytes > 0) {
    const uint64_t total = mean == 0 ? chunks : (request.window_bytes + mean - 1) / mean;
    k = (total + lanes - 1) / lanes;
  } else {
    k = cache_chunks == UINT64_MAX ? chunks : cache_chunks / (lanes + 1);
  }
  w.lane_window = std::clamp<uint64_t>(k, 1, std::max<uint64_t>(chunks, 1));
  return w;
}

}  // namespace sluice::pipeline

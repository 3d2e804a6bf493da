#include "format/index_block_cache.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace sluice::format {

std::shared_ptr<IndexBlockCache> NewIndexBlockCache(uint64_t capacity_bytes) {
  return std::make_shared<IndexBlockCache>(capacity_bytes);
}

IndexBlockCache::IndexBlockCache(uint64_t capacity_bytes)
    : num_sets_(std::max<uint64_t>(1, capacity_bytes / (2 * kSlotBytes + sizeof(Set)))),
      sets_(num_sets_),
      // Not value-initialized: the pages stay untouched until a slot is written.
      data_(std::make_unique_for_overwrite<char[]>(2 * num_sets_ * kSlotBytes)) {}

uint64_t IndexBlockCache::NewTableId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

// A table's blocks go to consecutive sets from a place chosen by its id: blocks of one table
// never meet in a set (up to num_sets_ blocks), so an index that fits stays whole.
size_t IndexBlockCache::SetOf(const Key& key) const {
  uint64_t h = key.table * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 31;
  return static_cast<size_t>((h + key.block) % num_sets_);
}

bool IndexBlockCache::Find(const Key& key, std::string* bytes) {
  const size_t s = SetOf(key);
  Stripe& stripe = stripes_[s % kStripes];
  std::lock_guard<std::mutex> lock(stripe.mu);
  Set& set = sets_[s];
  for (int w = 0; w < 2; ++w) {
    if (set.ways[w].key == key) {
      bytes->assign(Slot(s, w), set.ways[w].size);
      set.recent = static_cast<uint8_t>(w);
      ++stripe.hits;
      return true;
    }
  }
  ++stripe.misses;
  return false;
}

void IndexBlockCache::Insert(const Key& key, ByteView bytes) {
  if (bytes.size() > 2 * kSlotBytes || key.table == 0) return;
  const size_t s = SetOf(key);
  Stripe& stripe = stripes_[s % kStripes];
  std::lock_guard<std::mutex> lock(stripe.mu);
  Set& set = sets_[s];
  if (set.ways[0].key == key || set.ways[1].key == key) return;  // another thread read it too
  int w;
  if (bytes.size() > kSlotBytes || set.wide) {  // the new block or the old one takes both ways
    set = Set{};
    set.wide = bytes.size() > kSlotBytes;
    w = 0;
  } else {
    w = set.ways[0].key.table == 0 ? 0 : set.ways[1].key.table == 0 ? 1 : 1 - set.recent;
  }
  set.ways[w] = Way{key, static_cast<uint32_t>(bytes.size())};
  std::memcpy(Slot(s, w), bytes.data(), bytes.size());
  set.recent = static_cast<uint8_t>(w);
}

IndexBlockCache::Stats IndexBlockCache::stats() const {
  Stats total;
  for (size_t s = 0; s < num_sets_; ++s) {
    std::lock_guard<std::mutex> lock(stripes_[s % kStripes].mu);
    for (const Way& way : sets_[s].ways) total.blocks += way.key.table != 0;
  }
  for (Stripe& stripe : stripes_) {
    std::lock_guard<std::mutex> lock(stripe.mu);
    total.hits += stripe.hits;
    total.misses += stripe.misses;
  }
  total.bytes = 2 * num_sets_ * kSlotBytes;
  return total;
}

}  // namespace sluice::format

#include "format/index_block_cache.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace sluice::format {
namespace {

// A slot's bytes plus its list node and hash map node: what one cached block costs.
constexpr uint64_t kSlotOverheadBytes = 128;

}  // namespace

std::shared_ptr<IndexBlockCache> NewIndexBlockCache(uint64_t capacity_bytes) {
  return std::make_shared<IndexBlockCache>(capacity_bytes);
}

IndexBlockCache::IndexBlockCache(uint64_t capacity_bytes)
    : max_slots_(std::max<uint64_t>(1, capacity_bytes / (kSlotBytes + kSlotOverheadBytes))) {}

uint64_t IndexBlockCache::NewTableId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

bool IndexBlockCache::FindBytes(const Key& key, uint64_t offset, void* out, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end() || offset + n > it->second->size) {
    ++misses_;
    return false;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  std::memcpy(out, it->second->bytes.get() + offset, n);
  return true;
}

void IndexBlockCache::InsertBytes(const Key& key, const void* data, size_t n) {
  n = std::min(n, kSlotBytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (by_key_.contains(key)) return;  // another thread decoded it too
  if (lru_.size() < max_slots_) {
    lru_.emplace_front();
  } else {  // reuse the least recently used slot
    by_key_.erase(lru_.back().key);
    lru_.splice(lru_.begin(), lru_, std::prev(lru_.end()));
  }
  Slot& slot = lru_.front();
  slot.key = key;
  slot.size = n;
  std::memcpy(slot.bytes.get(), data, n);
  by_key_.emplace(key, lru_.begin());
}

IndexBlockCache::Stats IndexBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t blocks = lru_.size();
  return Stats{hits_, misses_, blocks, blocks * (kSlotBytes + kSlotOverheadBytes), max_slots_};
}

}  // namespace sluice::format

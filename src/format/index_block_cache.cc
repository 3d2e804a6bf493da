#include "format/index_block_cache.h"

#include <atomic>

namespace sluice::format {

std::shared_ptr<IndexBlockCache> NewIndexBlockCache(uint64_t capacity_bytes) {
  return std::make_shared<IndexBlockCache>(capacity_bytes);
}

uint64_t IndexBlockCache::NewTableId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

uint64_t IndexBlockCache::Charge(const IndexBlock& block) {
  // The shared_ptr control block with the IndexBlock, the LRU list node and the hash map
  // node (with its bucket): about 160 bytes on a 64-bit libstdc++.
  constexpr uint64_t kBookkeeping = 160;
  return kBookkeeping + block.frames.capacity() * sizeof(IndexFrame) +
         block.records.capacity() * sizeof(IndexRecord);
}

IndexBlockCache::BlockPtr IndexBlockCache::Find(const Key& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

IndexBlockCache::BlockPtr IndexBlockCache::Insert(const Key& key, BlockPtr block) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) return it->second->second;  // another thread decoded it too
  bytes_ += Charge(*block);
  lru_.emplace_front(key, block);
  by_key_.emplace(key, lru_.begin());
  while (bytes_ > capacity_ && lru_.size() > 1) {
    bytes_ -= Charge(*lru_.back().second);
    by_key_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return block;
}

IndexBlockCache::Stats IndexBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{hits_, misses_, bytes_, static_cast<uint64_t>(lru_.size())};
}

}  // namespace sluice::format

// IndexBlockCache: decoded blocks of index entries, shared by the lazily indexed
// ShardReaders of a pipeline. LRU, bounded by the bytes the blocks hold.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "sluice/format/shard_index.h"

namespace sluice::format {

// Consecutive entries of one table of one index: frames or records, never both.
struct IndexBlock {
  std::vector<IndexFrame> frames;
  std::vector<IndexRecord> records;
};

class IndexBlockCache {
 public:
  using BlockPtr = std::shared_ptr<const IndexBlock>;
  // Names a block: `table` is unique per index and table (NewTableId), `block` its number.
  struct Key {
    uint64_t table = 0;
    uint64_t block = 0;
    bool operator==(const Key&) const = default;
  };

  explicit IndexBlockCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // A process-wide unique id for one table of one open index.
  static uint64_t NewTableId();

  // The block cached under `key`, or null. Threading: every method is thread-safe.
  BlockPtr Find(const Key& key);
  // Caches `block` under `key` unless another thread cached one first; returns the block
  // cached. Evicts least recently used blocks beyond the capacity (never the one inserted,
  // so a block larger than the capacity is still returned, and dropped by the next insert).
  BlockPtr Insert(const Key& key, BlockPtr block);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t bytes = 0;   // charged by the blocks cached now
    uint64_t blocks = 0;  // cached now
  };
  Stats stats() const;
  uint64_t capacity_bytes() const { return capacity_; }

  // The bytes a block is charged: its entries plus the bookkeeping around them.
  static uint64_t Charge(const IndexBlock& block);

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const { return k.table * 0x9e3779b97f4a7c15ULL ^ k.block; }
  };
  using Lru = std::list<std::pair<Key, BlockPtr>>;

  const uint64_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;                                                   // guarded by mu_; newest first
  std::unordered_map<Key, Lru::iterator, KeyHash> by_key_;  // guarded by mu_
  uint64_t bytes_ = 0;                                        // guarded by mu_
  uint64_t hits_ = 0;                                         // guarded by mu_
  uint64_t misses_ = 0;                                       // guarded by mu_
};

}  // namespace sluice::format

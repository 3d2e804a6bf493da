// IndexBlockCache: decoded blocks of index entries, shared by the lazily indexed
// ShardReaders of a pipeline. LRU over a fixed number of equal slots, so its memory is
// bounded by its capacity whatever the access pattern (no per-miss allocation, nothing for
// the allocator to fragment).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "sluice/format/shard_index.h"

namespace sluice::format {

// Entries per block of a lazily read index: the IndexDirectory holds one checkpoint per
// block of each table, and a lookup that misses the cache reads and decodes one block.
inline constexpr uint64_t kIndexBlockEntries = 256;

class IndexBlockCache {
 public:
  // Names a block: `table` is unique per index and table (NewTableId), `block` its number.
  struct Key {
    uint64_t table = 0;
    uint64_t block = 0;
    bool operator==(const Key&) const = default;
  };

  explicit IndexBlockCache(uint64_t capacity_bytes);

  // A process-wide unique id for one table of one open index.
  static uint64_t NewTableId();

  // Threading: every method is thread-safe.
  // Copies entry j of the block cached under `key` into *entry; false when it is not cached.
  template <typename Entry>
  bool Find(const Key& key, uint64_t j, Entry* entry) {
    static_assert(std::is_trivially_copyable_v<Entry> && sizeof(Entry) <= kSlotEntryBytes);
    return FindBytes(key, j * sizeof(Entry), entry, sizeof(Entry));
  }
  // Caches entries[0, n) (n <= kIndexBlockEntries) as the block `key`, in the least
  // recently used slot when all are taken. A block cached already is left as it is.
  template <typename Entry>
  void Insert(const Key& key, const Entry* entries, uint64_t n) {
    static_assert(std::is_trivially_copyable_v<Entry> && sizeof(Entry) <= kSlotEntryBytes);
    InsertBytes(key, entries, n * sizeof(Entry));
  }

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t blocks = 0;      // cached now
    uint64_t bytes = 0;       // held by the slots allocated so far
    uint64_t max_blocks = 0;  // slots the capacity allows
  };
  Stats stats() const;

 private:
  static constexpr size_t kSlotEntryBytes = 24;  // sizeof(IndexFrame), sizeof(IndexRecord)
  static constexpr size_t kSlotBytes = kIndexBlockEntries * kSlotEntryBytes;
  struct Slot {
    Key key;
    std::unique_ptr<unsigned char[]> bytes = std::make_unique<unsigned char[]>(kSlotBytes);
    size_t size = 0;  // bytes of entries held
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return k.table * 0x9e3779b97f4a7c15ULL ^ k.block; }
  };
  using Lru = std::list<Slot>;

  bool FindBytes(const Key& key, uint64_t offset, void* out, size_t n);
  void InsertBytes(const Key& key, const void* data, size_t n);

  const uint64_t max_slots_;
  mutable std::mutex mu_;
  Lru lru_;                                                 // guarded by mu_; newest first
  std::unordered_map<Key, Lru::iterator, KeyHash> by_key_;  // guarded by mu_
  uint64_t hits_ = 0;                                       // guarded by mu_
  uint64_t misses_ = 0;                                     // guarded by mu_
};

}  // namespace sluice::format

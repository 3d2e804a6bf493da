// IndexBlockCache: blocks of index entries as stored in the index file (a few bytes per
// entry, CRC-checked when read), shared by the lazily indexed ShardReaders of a pipeline.
//
// Why this shape: under a global shuffle most lookups of a large dataset miss any cache of a
// few MiB, so a lookup must cost next to nothing, hit or miss. The cache is therefore a
// fixed array of 2-way sets (no allocation, no list or hash-node chasing per lookup), with a
// lock per group of sets, holding the encoded bytes (~8x more entries per byte than decoded
// ones); a block is decoded per lookup, only up to the entry wanted (IndexDirectory).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sluice/format/shard_index.h"

namespace sluice::format {

class IndexBlockCache {
 public:
  // Names a block: `table` is unique per index and table (NewTableId; never 0), `block` its
  // number.
  struct Key {
    uint64_t table = 0;
    uint64_t block = 0;
    bool operator==(const Key&) const = default;
  };
  // A block of up to kSlotBytes (128 entries of up to 4 bytes: small records) takes one way
  // of its set, a block of up to 2 * kSlotBytes (entries of up to 8 bytes) both. Larger
  // blocks (frames of 256 MiB and more) are read from the file each time.
  static constexpr size_t kSlotBytes = 512;

  // Memory: `capacity_bytes` (at least two slots), allocated at once but touched (resident)
  // only as slots fill.
  explicit IndexBlockCache(uint64_t capacity_bytes);

  // A process-wide unique id for one table of one open index.
  static uint64_t NewTableId();

  // Threading: every method is thread-safe.
  // Copies the bytes of the block cached under `key` into *bytes; false when not cached.
  bool Find(const Key& key, std::string* bytes);
  // Caches a copy of `bytes` as the block `key`, replacing the less recently used block of
  // its set. Blocks over kSlotBytes are not cached.
  void Insert(const Key& key, ByteView bytes);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t blocks = 0;  // cached now
    uint64_t bytes = 0;   // the slots' memory (the capacity, rounded down to whole slots)
  };
  Stats stats() const;

 private:
  struct Way {
    Key key;  // table 0: empty
    uint32_t size = 0;
  };
  struct Set {
    Way ways[2];         // a wide block is ways[0], spilling into way 1's slot
    bool wide = false;   // ways[0] holds a block of more than kSlotBytes
    uint8_t recent = 0;  // the way used last
  };
  static constexpr size_t kStripes = 64;
  struct alignas(64) Stripe {
    std::mutex mu;  // guards the sets s with s % kStripes == this stripe, and the counters
    uint64_t hits = 0;
    uint64_t misses = 0;
  };

  size_t SetOf(const Key& key) const;
  char* Slot(size_t set, int way) { return data_.get() + (2 * set + way) * kSlotBytes; }

  const size_t num_sets_;
  std::vector<Set> sets_;
  std::unique_ptr<char[]> data_;  // 2 * num_sets_ slots of kSlotBytes
  mutable Stripe stripes_[kStripes];
};

}  // namespace sluice::format

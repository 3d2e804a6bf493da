// What the node-local cache did, as seen by one process (docs/cache.md, "Operations"): what
// `iterator.stats()` and the stall report show. A plain struct, so the pipeline's stats can
// carry it without the cache's machinery.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::io::cache {

struct CacheStats {
  std::string dir;
  uint64_t capacity_bytes = 0;  // the directory's
  uint64_t used_bytes = 0;      // the directory's, at the last ledger update this process saw
  uint64_t reads = 0;           // chunk reads asked of the cache
  uint64_t hits = 0;            // served from the cache without waiting for a fetch
  uint64_t joined = 0;          // waited for a fetch already under way (this or another process)
  uint64_t misses = 0;          // fetched from the remote store by this process for a reader
  uint64_t lru_hits = 0;        // of `reads`, what an LRU cache of this capacity would have hit
  uint64_t fetches = 0;         // remote reads of whole chunks by this process (incl. prefetch)
  uint64_t fetched_bytes = 0;
  uint64_t prefetches = 0;  // of which started by the prefetcher
  uint64_t prefetched_bytes = 0;
  uint64_t stored = 0;     // chunks this process published
  uint64_t evictions = 0;  // chunks this process deleted to make room
  uint64_t evicted_bytes = 0;
  uint64_t skipped = 0;           // chunks not kept: no room worth making, or a disk error
  uint64_t damaged = 0;           // cache files found damaged, dropped and fetched again
  uint64_t lock_timeouts = 0;     // fetched without the node lock after lock_wait_seconds
  uint64_t read_errors = 0;       // cache reads that failed (counted as misses)
  uint64_t disk_timeouts = 0;     // cache disk operations past disk_timeout_seconds
  double fetch_wait_seconds = 0;  // time readers waited for fetches
  std::string policy;             // "future" or "lru" ("none" when bypassed)
  // Why every read bypasses the cache (its directory is unusable: unwritable, a full disk);
  // empty when the cache works.
  std::string bypassed;

  double hit_rate() const;
  double lru_hit_rate() const;
  // The counts of this minus those of `start` (figures of one iterator of a process whose
  // cache is shared); capacity, use, directory and policy stay this one's.
  CacheStats Since(const CacheStats& start) const;
  // "cache /x: hit rate 93.1% (LRU would have had 0.0%), fetched 1.2 GiB in 310 reads,
  // evicted 0 B, waited 0.40 s for fetches, 3.9 GiB of 4.0 GiB used"
  std::string ToString() const;
};

}  // namespace sluice::io::cache

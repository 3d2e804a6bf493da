// The node-local cache tier (docs/cache.md): chunks of remote files kept in a directory on
// local disk that all processes of a node share. A chunk wanted by several processes at once
// is fetched once per node; chunks are written atomically and checked (CRC) on every read; a
// damaged one is dropped and fetched again, never returned; the directory survives restarts
// and its capacity is never exceeded. Eviction follows the order's known future (Belady's MIN,
// eviction.h) and the next window's chunks are fetched ahead.
//
// The cache is best effort: a chunk it cannot store is still returned to the reader (it is
// just not kept), a cache file it cannot read is a miss, so the reader goes to the remote
// store, and a directory it cannot use at all (unwritable, a full disk) makes a bypassed
// cache that reads straight from the remote store (SharedCache). Readers use it through a
// FileSystem (cached_file_system.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sluice/base/thread_pool.h"
#include "sluice/io/cache/cache_stats.h"
#include "sluice/io/cache/eviction.h"
#include "sluice/io/file_system.h"

namespace sluice::io::cache {

class ChunkStore;
class Ledger;
class LedgerLock;
class ChunkLocks;
class TimeBoundChunkStore;

struct CacheOptions {
  // The cache directory. Default: "" = DefaultCacheDir() ($XDG_CACHE_HOME/sluice, else
  // ~/.cache/sluice).
  std::string dir;
  // Bytes the directory's chunk files may take, shared by every process using it. Default: 0 =
  // the capacity the directory already has, or for a new one DefaultCacheBytes(dir). A
  // different value replaces the directory's capacity (the newest setting wins; chunks beyond
  // it are evicted).
  uint64_t capacity_bytes = 0;
  // Reads outside the chunks the plan names are cached in aligned blocks of this size.
  // Default: 4 MiB.
  uint64_t block_bytes = uint64_t{4} << 20;
  // Chunk fetches the prefetcher keeps in flight. Default: 4 (0 disables prefetch).
  uint32_t prefetch_fetches = 4;
  // Prefetch bandwidth cap in bytes per second. Default: 0 = none.
  uint64_t prefetch_bytes_per_second = 0;
  // Windows past the current one whose chunks are prefetched. Default: 1.
  uint32_t prefetch_windows = 1;
  // Windows behind the newest read that stay protected from eviction. Default: 1.
  uint32_t lag_windows = 1;
  // How long a reader waits for another process's fetch of a chunk before fetching it itself
  // (that process may hang). Default: 120 s.
  double lock_wait_seconds = 120;
  // A cache disk read or write taking longer than this is given up: the read is a miss, the
  // chunk is not stored (a hung disk makes the cache useless, never the reader hung).
  // Default: 30 s (0: no deadline).
  double disk_timeout_seconds = 30;
  // fsync chunk files before publishing them. Default: false (a chunk torn by a power cut
  // fails its CRC and is fetched again).
  bool sync = false;
  // Threads for cache disk I/O and for blocking reads of remote file systems that have no
  // asynchronous engine. Default: 8.
  uint32_t io_threads = 8;
  // Observer for crash tests: called with "fetch" before a remote read of a chunk, "staged"
  // once its file is written under its temporary name (before it is published), and
  // "published". Default: none.
  std::function<void(std::string_view event)> on_event;
};

// $XDG_CACHE_HOME/sluice when XDG_CACHE_HOME is set (and absolute), else $HOME/.cache/sluice.
std::string DefaultCacheDir();
// Half of the free space of the file system holding `dir` (its nearest existing ancestor),
// plus what the cache there already takes; at least 1 GiB.
uint64_t DefaultCacheBytes(const std::string& dir);

// A chunk as readers and the plan name it: its key (cache_keys.h), the remote file it comes
// from and its byte range there.
struct ChunkRef {
  std::string key;
  ChunkId id;
  std::shared_ptr<const RandomAccessFile> remote;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// The node's future reads, for eviction and prefetch: chunks in the order of their reads,
// each with the window of the order it belongs to (non-decreasing).
struct CachePlan {
  std::vector<ChunkRef> chunks;  // distinct chunks
  struct Use {
    uint32_t chunk;  // index in `chunks`
    uint64_t window;
  };
  std::vector<Use> uses;
};

// The coordinator of one cache directory in this process: it owns the store (moves bytes),
// the index (what is cached, and its size) and the eviction policy (ids), and it alone takes
// the locks. Lock order (a thread holding a later lock never waits for an earlier one):
//   1. a chunk's node lock (ChunkLocks: cross-process, try-only). Held by the one process
//      fetching the chunk, from the decision to fetch until the chunk is published or given
//      up, across remote I/O: it is what other processes wait for.
//   2. the ledger lock (Ledger: in-process mutex, then flock). Held while the index and the
//      ledger change: evictions, publishing (rename), drops, scans. Never across remote I/O.
//   3. mu_ (in-process). Guards the index, the policy, the flights, the plan and the stats.
//      Held across nothing slower than the unlink of an evicted chunk.
// Threading: all public methods may be called from any thread. Callbacks run on the cache's
// I/O threads. Destroy a Cache only when none of its reads is pending (SharedCache() objects
// live until the process exits).
class Cache {
 public:
  static Result<std::shared_ptr<Cache>> Open(const CacheOptions& options);
  // A cache that keeps nothing: every read goes to its chunk's remote file, plans are
  // ignored, Clear fails with `why` (what Open returned for the directory).
  static std::shared_ptr<Cache> Bypassing(const CacheOptions& options, Status why);
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // Bytes [begin, begin + n) of `chunk` (clipped to it), from the directory or fetched from
  // chunk.remote (once per node for concurrent readers). `done` runs exactly once, never
  // inside Read; with a cancelled context it may get Cancelled.
  void Read(const ChunkRef& chunk, uint64_t begin, uint64_t n, ReadCallback done,
            const IoContext& context = {});
  // Replaces the plan (an epoch start, a restore) and starts prefetching along it. Returns the
  // plan's id (0 from a bypassed cache), for WithdrawPlan.
  uint64_t SetPlan(CachePlan plan);
  // Drops the plan `id` if it is still the current one (no later SetPlan replaced it): the
  // reader it was made for has ended, so nothing is prefetched or protected for it any more;
  // fetches under way finish, no new one starts. The cache then evicts by recency.
  void WithdrawPlan(uint64_t id);
  CacheStats stats() const;
  // Waits until every fetch, prefetch and store under way has finished (readers get their
  // bytes before the chunk is stored: `cache warm` and tests wait here).
  void Drain();
  // Deletes every chunk of the directory (all processes' views become empty).
  Status Clear();
  const std::string& dir() const { return dir_; }
  // Why reads bypass this cache (Bypassing); OK when they do not.
  const Status& bypassed() const { return bypassed_; }
  uint64_t capacity() const;
  const CacheOptions& options() const { return options_; }

 private:
  struct Waiter {
    uint64_t begin = 0, n = 0;
    ReadCallback done;
    std::shared_ptr<const CancelToken> cancel;
    std::chrono::steady_clock::time_point since;
    bool joined = false;  // joined a flight another reader (or the prefetcher) started
    std::function<std::string(size_t)> buffer;  // IoContext::buffer of the read
  };
  enum class FlightState { kLocking, kWaitingForNode, kFetching, kStoring };
  // One chunk on its way into the cache; at most one per chunk in this process.
  struct Flight {
    ChunkRef chunk;
    FlightState state = FlightState::kLocking;
    std::vector<Waiter> waiters;
    std::shared_ptr<const std::string> bytes;  // kStoring: the fetched chunk
    bool prefetch = false;                     // started by the prefetcher
    bool holds_node_lock = false;
    std::chrono::steady_clock::time_point waiting_since;
  };
  using FlightPtr = std::shared_ptr<Flight>;
  enum class Served { kHit, kJoined, kMiss };

  Cache(const CacheOptions& options, std::string dir);
  Status Init();
  void Submit(std::function<void()> task);
  // Reads (cache.cc).
  bool JoinLocked(const ChunkId& id, Waiter* w);  // false when the chunk has no flight
  void ReadFromDisk(const ChunkRef& chunk, Waiter w);
  void ReadBypassing(const ChunkRef& chunk, uint64_t begin, uint64_t n, ReadCallback done,
                     const IoContext& context);
  void Miss(const ChunkRef& chunk, Waiter w);
  void Acquire(FlightPtr f);  // takes the node lock or waits for it, then AfterLock
  // Prefetched chunks adjacent in one remote file: each locked (or left waiting) and checked
  // as Acquire would, then those still missing fetched in one ReadRangesAsync.
  void AcquireGroup(std::vector<FlightPtr> group);
  bool LockOrWait(const FlightPtr& f);  // false: the flight now waits for another process
  void AfterLock(FlightPtr f);          // re-checks the disk, else fetches
  bool NeedsFetch(const FlightPtr& f);  // false: served from the disk, or given up
  void Fetch(FlightPtr f) { FetchGroup({std::move(f)}); }
  void FetchGroup(std::vector<FlightPtr> group);
  // `schedule`: look for more to prefetch once done (a group does it once, after its last).
  void OnFetched(FlightPtr f, Result<std::string> got, bool schedule = true);
  bool FinishIfUnwanted(const FlightPtr& f);
  void EndFlightLocked(const FlightPtr& f);
  void Finish(FlightPtr f, const Result<std::shared_ptr<const std::string>>& bytes, Served how,
              bool schedule = true);
  void Complete(std::vector<Waiter> waiters,
                const Result<std::shared_ptr<const std::string>>& bytes, Served how);
  // The index and the ledger (cache_index.cc).
  Status OpenLedger();
  Status RebuildLocked(LedgerLock& ledger, bool empty_on_overflow);
  Status SyncWithLedger(LedgerLock& ledger);
  uint64_t EvictLocked(const ChunkId& victim);  // mu_ and the ledger lock held
  bool Store(const ChunkRef& chunk, std::shared_ptr<const std::string> bytes);
  void Drop(const ChunkId& id);
  void NoteOnDisk(const ChunkId& id);
  // The plan, prefetch and the poller (cache_prefetch.cc).
  bool WorthPrefetchLocked(const ChunkId& id, uint64_t bytes);
  // Appends to `group` prefetch flights for the planned chunks that continue its last one in
  // its file (the node's plan needs them, this epoch or the next), up to kFetchGroupBytes in
  // all and as the capacity allows (WorthPrefetchLocked): a reader's miss, or a prefetch,
  // fetches its neighbours in the same request (an unshuffled read's windows are a chunk
  // each, so the prefetch windows alone would make groups of two). They count as prefetches
  // in flight, but do not wait for a free prefetch slot (the request is going out anyway).
  void ExtendGroupLocked(std::vector<FlightPtr>* group, uint64_t* group_bytes);
  static constexpr uint64_t kFetchGroupBytes = uint64_t{8} << 20;
  // Moves next_prefetch_at_ on by `bytes` at prefetch_bytes_per_second (no cap: nothing).
  void ChargePrefetchLocked(uint64_t bytes);
  void SchedulePrefetch();
  void PollLoop();
  void PollWaiting(const FlightPtr& f);

  const CacheOptions options_;
  const std::string dir_;
  Status bypassed_;  // set once, before the cache is shared; then none of the below is made
  std::unique_ptr<ChunkStore> store_;
  std::unique_ptr<TimeBoundChunkStore> bounded_;  // store_'s reads and writes, with a deadline
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<ChunkLocks> locks_;

  mutable std::mutex mu_;
  std::unordered_map<ChunkId, uint64_t, ChunkIdHash> index_;  // cached chunk -> file bytes
  uint64_t index_bytes_ = 0;
  uint64_t generation_ = 0;           // of the ledger this index belongs to
  uint64_t capacity_ = 0, used_ = 0;  // the ledger's, when last locked
  std::unique_ptr<EvictionPolicy> policy_;
  FuturePolicy* future_ = nullptr;  // policy_
  LruPolicy ghost_lru_;
  std::unique_ptr<CacheSimulator> ghost_;  // LRU on the same reads, for the report
  std::unordered_map<ChunkId, FlightPtr, ChunkIdHash> flights_;
  std::unordered_map<ChunkId, ChunkRef, ChunkIdHash> planned_;  // the plan's chunks
  uint64_t plan_id_ = 0;  // of the current plan (SetPlan counts them), 0 before the first
  // The plan's chunks by (remote file, offset): which planned chunk continues another.
  std::map<std::pair<const RandomAccessFile*, uint64_t>, ChunkId> planned_at_;
  uint32_t prefetching_ = 0;
  std::chrono::steady_clock::time_point next_prefetch_at_;
  CacheStats stats_;
  bool stopping_ = false;
  std::condition_variable poll_cv_;
  uint64_t pending_ = 0;  // tasks and remote reads under way; ~Cache waits for 0
  std::condition_variable idle_cv_;

  std::unique_ptr<ThreadPool> io_;
  std::thread poller_;
};

// The Cache of `options.dir` for this process: opened once, shared by every dataset that uses
// the directory, alive until the process exits. Later calls with another capacity for the
// same directory get the first one's cache. A directory that cannot be opened as a cache gives
// a bypassed one (Cache::Bypassing), said once on stderr and in every report of its stats.
Result<std::shared_ptr<Cache>> SharedCache(const CacheOptions& options);

}  // namespace sluice::io::cache

// Eviction policies of the node-local cache (docs/cache.md, "Eviction"). A policy sees only
// chunk ids: it is told about accesses, insertions and deletions, and picks a victim. It
// knows nothing about bytes, files or locks (the coordinator does), so each policy fits on a
// page and is tested on traces, without disks or processes.
//
// Threading: not thread-safe; the coordinator calls a policy under its own mutex.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace sluice::io::cache {

// A chunk's identity: 128 bits of a hash of its key text (file identity and byte range,
// docs/cache.md, "Keys"). Also the chunk file's name (32 hex digits).
struct ChunkId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  auto operator<=>(const ChunkId&) const = default;
  std::string Hex() const;
  // Parses 32 lower-case hex digits; nullopt otherwise.
  static std::optional<ChunkId> FromHex(std::string_view hex);
};

struct ChunkIdHash {
  size_t operator()(const ChunkId& id) const { return static_cast<size_t>(id.lo ^ (id.hi << 1)); }
};

// The id of a key text (docs/cache.md gives the function, so other tools can compute it).
ChunkId ChunkIdOf(std::string_view key);

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string_view name() const = 0;
  // A reader asked for `id` (whether or not it is cached): called before OnPut of a miss.
  virtual void OnGet(const ChunkId& id) = 0;
  // `id` is now cached / no longer cached.
  virtual void OnPut(const ChunkId& id) = 0;
  virtual void OnDelete(const ChunkId& id) = 0;
  // The cached chunk to evict so that `incoming` can be stored, or nullopt when `incoming`
  // should not be stored at the cost of any cached chunk (it is worth less than all of them,
  // or nothing can go).
  virtual std::optional<ChunkId> PickVictim(const ChunkId& incoming) = 0;
};

// Least recently used: the victim is the cached chunk accessed longest ago; always admits.
// The peer every report compares against (docs/cache.md: on a cyclic scan larger than the
// cache it keeps nothing useful).
class LruPolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "lru"; }
  void OnGet(const ChunkId& id) override;
  void OnPut(const ChunkId& id) override;
  void OnDelete(const ChunkId& id) override;
  std::optional<ChunkId> PickVictim(const ChunkId& incoming) override;

 private:
  std::list<ChunkId> recency_;  // most recent first
  std::unordered_map<ChunkId, std::list<ChunkId>::iterator, ChunkIdHash> where_;
};

// One planned read of a chunk: the node's reads in the order they will happen (for the
// current and the next epoch), each tagged with the window of the order it belongs to.
// Windows are non-decreasing along a plan.
struct PlannedUse {
  ChunkId id;
  uint64_t window = 0;
};

struct FuturePolicyOptions {
  // Windows before the newest one read that stay protected: readers read ahead of the
  // consumer, so the window being consumed may be behind the newest one accessed. Default: 1.
  uint32_t lag_windows = 1;
};

// Belady's MIN from the order's known future: the victim is the cached chunk whose next
// planned use is farthest away, never a chunk with a use still to come in the protected
// windows (the current one and `lag_windows` before it). A chunk not needed again by the plan
// goes first (least recently used first among those); without a plan this is LRU. `incoming`
// itself is a candidate: a chunk needed later than every cached one is not stored (MIN with
// bypass), and a chunk whose planned uses are over does not displace one still needed.
//
// Chunks the plan never names (a shard's index, read piece by piece all epoch long, headers)
// are not "never needed": while one is read in the protected windows it is protected like a
// chunk of the current window (so it is stored, and kept, at the expense of the chunk needed
// farthest away); once no read touched it for `lag_windows` windows it goes first. A new plan
// (an epoch start) counts the cached ones read before it as read in its first window.
//
// Each read of a chunk consumes its earliest planned use still to come (uses in windows older
// than the protected ones count as gone: a restore or a reader that skipped them). "Now" is
// the window of the newest use consumed: it advances from the reads themselves, so the reader
// needs no extra hook, and when every window holds one read and lag_windows = 0 the policy is
// exactly MIN.
class FuturePolicy final : public EvictionPolicy {
 public:
  explicit FuturePolicy(FuturePolicyOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "future"; }
  // Replaces the plan (at an epoch start or a restore) and starts "now" at its first window.
  void SetPlan(const std::vector<PlannedUse>& plan);
  void OnGet(const ChunkId& id) override;
  void OnPut(const ChunkId& id) override;
  void OnDelete(const ChunkId& id) override;
  std::optional<ChunkId> PickVictim(const ChunkId& incoming) override;

  // The current window ("now"), renumbered from 0 along the plan.
  uint64_t current_window() const { return now_; }
  bool has_plan() const { return !window_start_.empty(); }
  // Whether `id` has a use still to come in the protected windows (never evicted then).
  bool Protected(const ChunkId& id) const;
  // Plan index of the next use of `id` still to come; UINT64_MAX when none.
  uint64_t NextUse(const ChunkId& id) const;
  // The planned ids from the start of the current window on, in plan order, up to and
  // including window current_window() + windows_ahead (what prefetch walks).
  std::vector<ChunkId> Upcoming(uint32_t windows_ahead) const;

 private:
  static constexpr uint64_t kNever = UINT64_MAX;
  using Key = std::tuple<uint64_t, uint64_t, ChunkId>;  // (next use, ~last access tick, id)
  struct Uses {
    std::vector<uint64_t> at;  // plan indices, ascending
    size_t consumed = 0;       // how many of them reads consumed
  };
  // Plan index where window w starts (plan size past the last window).
  uint64_t WindowStart(uint64_t w) const;
  uint64_t WindowOf(uint64_t plan_index) const;
  // The first use of `uses` still to come: not consumed, not older than the protected windows.
  const uint64_t* FirstComing(const Uses& uses) const;
  Key KeyOf(const ChunkId& id) const;
  void Rekey(const ChunkId& id);  // after its uses or access tick changed
  void Rebuild();                 // after "now" moved

  const FuturePolicyOptions options_;
  std::vector<PlannedUse> plan_;
  std::vector<uint64_t> window_start_;  // first plan index of each window (windows renumbered)
  std::unordered_map<ChunkId, Uses, ChunkIdHash> uses_;
  uint64_t now_ = 0;  // renumbered window
  uint64_t tick_ = 0;
  std::unordered_map<ChunkId, uint64_t, ChunkIdHash> last_access_;  // cached ids -> tick
  // Ids the plan does not name, read under this plan or cached -> the window ("now") of their
  // last read (0 for those read before the plan).
  std::unordered_map<ChunkId, uint64_t, ChunkIdHash> unplanned_reads_;
  std::set<Key> evictable_;  // cached, not protected; the victim is the largest
  std::unordered_map<ChunkId, Key, ChunkIdHash> key_of_;  // cached, not protected
};

// Evicts chunks chosen by `policy` until `size` more bytes fit within `capacity` bytes, given
// `*used`; `evict(id)` removes one chunk and returns the bytes it freed (0 if it was already
// gone). Returns false, having evicted what it did, when the policy declines to go further.
// The coordinator and the simulator share it, so what is simulated is what runs.
bool MakeRoom(EvictionPolicy& policy, const ChunkId& incoming, uint64_t size, uint64_t capacity,
              uint64_t* used, const std::function<uint64_t(const ChunkId&)>& evict);

// Replays accesses against a policy with a byte capacity, without disks: what the cache
// reports as "the hit rate LRU would have had" and what the benchmarks compare policies with.
class CacheSimulator {
 public:
  CacheSimulator(EvictionPolicy* policy, uint64_t capacity)
      : policy_(policy), capacity_(capacity) {}
  // One read of `id` of `size` bytes; true on a hit. A miss is stored if the policy finds room.
  bool Access(const ChunkId& id, uint64_t size);

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  uint64_t hit_bytes() const { return hit_bytes_; }
  uint64_t miss_bytes() const { return miss_bytes_; }
  uint64_t used() const { return used_; }
  double hit_rate() const;
  bool Contains(const ChunkId& id) const { return sizes_.count(id) > 0; }

 private:
  EvictionPolicy* policy_;
  uint64_t capacity_;
  uint64_t used_ = 0;
  uint64_t hits_ = 0, misses_ = 0, hit_bytes_ = 0, miss_bytes_ = 0;
  std::unordered_map<ChunkId, uint64_t, ChunkIdHash> sizes_;
};

}  // namespace sluice::io::cache

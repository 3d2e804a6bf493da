// Chunk ids, the LRU and future (MIN) policies, and the simulator that replays traces.
#include "sluice/io/cache/eviction.h"

#include <algorithm>
#include <bit>

#include "sluice/base/bytes.h"
#include "sluice/base/random.h"

namespace sluice::io::cache {

std::string ChunkId::Hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(hi >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

std::optional<ChunkId> ChunkId::FromHex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  ChunkId id;
  for (size_t i = 0; i < 32; ++i) {
    char c = hex[i];
    uint64_t d;
    if (c >= '0' && c <= '9') {
      d = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    uint64_t& half = i < 16 ? id.hi : id.lo;
    half = (half << 4) | d;
  }
  return id;
}

ChunkId ChunkIdOf(std::string_view key) {
  // Two lanes over the key's little-endian 8-byte words (the last one zero-padded), each a
  // different SplitMix64-based chain, crossed at the end (docs/cache.md, "Keys").
  uint64_t a = 0x736c756963652d31ull ^ key.size();
  uint64_t b = 0x6b65792d68617368ull + key.size();
  for (size_t i = 0; i < key.size(); i += 8) {
    char word[8] = {};
    std::copy_n(key.data() + i, std::min<size_t>(8, key.size() - i), word);
    uint64_t w = DecodeFixed64(word);
    a = Mix64(a ^ w);
    b = Mix64(b + w + 0x9e3779b97f4a7c15ull);
  }
  return ChunkId{Mix64(a ^ std::rotl(b, 29)), Mix64(b ^ std::rotl(a, 17))};
}

// --- LRU ---

void LruPolicy::OnGet(const ChunkId& id) {
  auto it = where_.find(id);
  if (it != where_.end()) recency_.splice(recency_.begin(), recency_, it->second);
}

void LruPolicy::OnPut(const ChunkId& id) {
  if (where_.count(id) > 0) return OnGet(id);
  recency_.push_front(id);
  where_[id] = recency_.begin();
}

void LruPolicy::OnDelete(const ChunkId& id) {
  auto it = where_.find(id);
  if (it == where_.end()) return;
  recency_.erase(it->second);
  where_.erase(it);
}

std::optional<ChunkId> LruPolicy::PickVictim(const ChunkId&) {
  if (recency_.empty()) return std::nullopt;
  return recency_.back();
}

// --- future (MIN) ---

void FuturePolicy::SetPlan(const std::vector<PlannedUse>& plan) {
  plan_ = plan;
  window_start_.clear();
  uses_.clear();
  for (uint64_t i = 0; i < plan_.size(); ++i) {
    if (i == 0 || plan_[i].window != plan_[i - 1].window) window_start_.push_back(i);
    uses_[plan_[i].id].at.push_back(i);
  }
  now_ = 0;
  // Unplanned chunks read before (an index read all last epoch, or at open) count as read in
  // the new plan's first window: the next epoch's reads find them.
  for (auto it = unplanned_reads_.begin(); it != unplanned_reads_.end();) {
    if (uses_.count(it->first) > 0 || last_access_.count(it->first) == 0) {
      it = unplanned_reads_.erase(it);
    } else {
      (it++)->second = 0;
    }
  }
  Rebuild();
}

uint64_t FuturePolicy::WindowStart(uint64_t w) const {
  return w < window_start_.size() ? window_start_[w] : plan_.size();
}

uint64_t FuturePolicy::WindowOf(uint64_t plan_index) const {
  auto it = std::upper_bound(window_start_.begin(), window_start_.end(), plan_index);
  return static_cast<uint64_t>(it - window_start_.begin()) - 1;
}

const uint64_t* FuturePolicy::FirstComing(const Uses& uses) const {
  uint64_t from = WindowStart(now_ >= options_.lag_windows ? now_ - options_.lag_windows : 0);
  auto it = std::lower_bound(uses.at.begin(), uses.at.end(), from);
  it = std::max(it, uses.at.begin() + static_cast<std::ptrdiff_t>(uses.consumed));
  return it == uses.at.end() ? nullptr : &*it;
}

bool FuturePolicy::Protected(const ChunkId& id) const {
  auto it = uses_.find(id);
  if (it == uses_.end()) {
    auto read = unplanned_reads_.find(id);
    return has_plan() && read != unplanned_reads_.end() &&
           read->second + options_.lag_windows >= now_;
  }
  const uint64_t* next = FirstComing(it->second);
  return next != nullptr && *next < WindowStart(now_ + 1);
}

uint64_t FuturePolicy::NextUse(const ChunkId& id) const {
  auto it = uses_.find(id);
  if (it == uses_.end()) return kNever;
  const uint64_t* next = FirstComing(it->second);
  return next == nullptr ? kNever : *next;
}

std::vector<ChunkId> FuturePolicy::Upcoming(uint32_t windows_ahead) const {
  std::vector<ChunkId> out;
  for (uint64_t i = WindowStart(now_); i < WindowStart(now_ + windows_ahead + 1); ++i) {
    out.push_back(plan_[i].id);
  }
  return out;
}

FuturePolicy::Key FuturePolicy::KeyOf(const ChunkId& id) const {
  return Key(NextUse(id), ~last_access_.at(id), id);
}

void FuturePolicy::Rekey(const ChunkId& id) {
  if (last_access_.count(id) == 0) return;  // not cached
  auto k = key_of_.find(id);
  if (k != key_of_.end()) {
    evictable_.erase(k->second);
    key_of_.erase(k);
  }
  if (Protected(id)) return;
  Key key = KeyOf(id);
  evictable_.insert(key);
  key_of_.emplace(id, key);
}

void FuturePolicy::Rebuild() {
  evictable_.clear();
  key_of_.clear();
  for (const auto& [id, tick] : last_access_) Rekey(id);
}

void FuturePolicy::OnGet(const ChunkId& id) {
  ++tick_;
  auto cached = last_access_.find(id);
  if (cached != last_access_.end()) cached->second = tick_;
  auto it = uses_.find(id);
  if (it == uses_.end() && (has_plan() || cached != last_access_.end())) {
    unplanned_reads_[id] = now_;
  }
  if (it != uses_.end()) {
    if (const uint64_t* use = FirstComing(it->second)) {
      // This read consumes that use; "now" moves to its window.
      it->second.consumed = static_cast<size_t>(use - it->second.at.data()) + 1;
      uint64_t w = WindowOf(*use);
      if (w > now_) {
        now_ = w;
        return Rebuild();
      }
    }
  }
  Rekey(id);
}

void FuturePolicy::OnPut(const ChunkId& id) {
  if (last_access_.count(id) > 0) return OnGet(id);
  last_access_[id] = ++tick_;
  if (uses_.count(id) == 0) unplanned_reads_[id] = now_;
  Rekey(id);
}

void FuturePolicy::OnDelete(const ChunkId& id) {
  auto k = key_of_.find(id);
  if (k != key_of_.end()) {
    evictable_.erase(k->second);
    key_of_.erase(k);
  }
  last_access_.erase(id);
  unplanned_reads_.erase(id);
}

std::optional<ChunkId> FuturePolicy::PickVictim(const ChunkId& incoming) {
  if (evictable_.empty()) return std::nullopt;
  const auto& [victim_next, unused_tick, victim] = *evictable_.rbegin();
  if (victim_next == kNever || Protected(incoming)) return victim;
  // The victim is needed again: give it up only for a chunk needed sooner.
  uint64_t incoming_next = NextUse(incoming);
  if (incoming_next != kNever && incoming_next < victim_next) return victim;
  return std::nullopt;
}

// --- shared by the coordinator and the simulator ---

bool MakeRoom(EvictionPolicy& policy, const ChunkId& incoming, uint64_t size, uint64_t capacity,
              uint64_t* used, const std::function<uint64_t(const ChunkId&)>& evict) {
  if (size > capacity) return false;
  while (*used + size > capacity) {
    std::optional<ChunkId> victim = policy.PickVictim(incoming);
    if (!victim) return false;
    uint64_t freed = evict(*victim);
    policy.OnDelete(*victim);
    *used -= std::min(freed, *used);
  }
  return true;
}

bool CacheSimulator::Access(const ChunkId& id, uint64_t size) {
  policy_->OnGet(id);
  if (sizes_.count(id) > 0) {
    ++hits_;
    hit_bytes_ += size;
    return true;
  }
  ++misses_;
  miss_bytes_ += size;
  auto evict = [this](const ChunkId& victim) -> uint64_t {
    auto it = sizes_.find(victim);
    if (it == sizes_.end()) return 0;
    uint64_t freed = it->second;
    sizes_.erase(it);
    return freed;
  };
  if (MakeRoom(*policy_, id, size, capacity_, &used_, evict)) {
    sizes_[id] = size;
    used_ += size;
    policy_->OnPut(id);
  }
  return false;
}

double CacheSimulator::hit_rate() const {
  uint64_t total = hits_ + misses_;
  return total == 0 ? 0.0 : static_cast<double>(hits_) / static_cast<double>(total);
}

}  // namespace sluice::io::cache

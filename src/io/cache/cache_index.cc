// The cache coordinator's index and ledger side: storing a fetched chunk (index first, then
// the rename, rolled back if it fails), dropping damaged ones, and rebuilding the index by
// scanning the directory (docs/cache.md, "Capacity").
#include <algorithm>
#include <cstdio>

#include "chunk_locks.h"
#include "chunk_store.h"
#include "ledger.h"
#include "sluice/io/cache/cache.h"
#include "time_bound_store.h"

namespace sluice::io::cache {

Status Cache::OpenLedger() {
  SLUICE_ASSIGN_OR_RETURN(LedgerLock ledger, ledger_->Lock());
  LedgerState& s = ledger.state();
  const uint64_t before = s.capacity;
  if (options_.capacity_bytes != 0) {
    s.capacity = options_.capacity_bytes;
  } else if (ledger.fresh() || s.capacity == 0) {
    s.capacity = DefaultCacheBytes(dir_);
  }
  // The scan at start: the index is what is on disk. If the directory holds more than its
  // capacity although nobody changed the capacity, its state is unknown: start empty.
  const bool resized = !ledger.fresh() && s.capacity != before;
  SLUICE_RETURN_IF_ERROR(RebuildLocked(ledger, /*empty_on_overflow=*/!resized));
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A smaller capacity than before: evict down to it.
    MakeRoom(*policy_, ChunkId{}, 0, s.capacity, &s.used,
             [&](const ChunkId& victim) { return EvictLocked(victim); });
    capacity_ = s.capacity;
    used_ = s.used;
    stats_.capacity_bytes = capacity_;
    stats_.used_bytes = used_;
  }
  return ledger.Save();
}

Status Cache::RebuildLocked(LedgerLock& ledger, bool empty_on_overflow) {
  Result<std::vector<StoredChunk>> scan = store_->Scan(/*remove_stale_temps=*/true);
  std::vector<StoredChunk> chunks;
  uint64_t total = 0;
  if (scan.ok()) {
    chunks = std::move(*scan);
    for (const StoredChunk& c : chunks) total += c.file_bytes;
  }
  if (!scan.ok() || (empty_on_overflow && total > ledger.state().capacity)) {
    std::fprintf(stderr, "sluice: cache %s: %s; starting empty\n", dir_.c_str(),
                 scan.ok() ? "holds more than its capacity" : scan.status().ToString().c_str());
    for (const StoredChunk& c : chunks) (void)store_->Delete(c.id);
    chunks.clear();
    total = 0;
  }
  // Oldest first, so that among chunks no plan needs the policy evicts the oldest first.
  std::sort(chunks.begin(), chunks.end(),
            [](const StoredChunk& a, const StoredChunk& b) { return a.mtime_ns < b.mtime_ns; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, bytes] : index_) policy_->OnDelete(id);
  index_.clear();
  for (const StoredChunk& c : chunks) {
    index_[c.id] = c.file_bytes;
    policy_->OnPut(c.id);
  }
  index_bytes_ = total;
  ledger.state().used = total;
  generation_ = ledger.state().generation;
  used_ = total;
  return Status::OK();
}

Status Cache::SyncWithLedger(LedgerLock& ledger) {
  if (ledger.fresh()) {
    // The ledger was damaged or deleted: recompute it from the directory.
    if (ledger.state().capacity == 0) ledger.state().capacity = capacity_;
    return RebuildLocked(ledger, /*empty_on_overflow=*/true);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (ledger.state().generation != generation_) {
    // Someone cleared the directory: this process's index describes files that are gone.
    for (const auto& [id, bytes] : index_) policy_->OnDelete(id);
    index_.clear();
    index_bytes_ = 0;
    generation_ = ledger.state().generation;
  }
  capacity_ = ledger.state().capacity;
  return Status::OK();
}

uint64_t Cache::EvictLocked(const ChunkId& victim) {
  Result<uint64_t> freed = store_->Delete(victim);
  auto it = index_.find(victim);
  if (it != index_.end()) {
    index_bytes_ -= std::min(index_bytes_, it->second);
    index_.erase(it);
  }
  if (!freed.ok() || *freed == 0) return 0;
  ++stats_.evictions;
  stats_.evicted_bytes += *freed;
  return *freed;
}

bool Cache::Store(const ChunkRef& chunk, std::shared_ptr<const std::string> bytes) {
  auto skip = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.skipped;
    return false;
  };
  Result<StagedChunk> staged = bounded_->Stage(chunk.id, chunk.key, std::move(bytes));
  if (!staged.ok()) return skip();
  if (options_.on_event) options_.on_event("staged");
  Result<LedgerLock> ledger = ledger_->Lock();
  if (!ledger.ok() || !SyncWithLedger(*ledger).ok()) {
    store_->Discard(*staged);
    return skip();
  }
  // Re-check after re-locking: another process may have published the chunk meanwhile.
  if (store_->FileBytes(chunk.id).ok()) {
    store_->Discard(*staged);
    NoteOnDisk(chunk.id);
    return true;
  }
  LedgerState& s = ledger->state();
  const uint64_t size = staged->file_bytes;
  bool room = false;
  for (int attempt = 0;; ++attempt) {
    std::unique_lock<std::mutex> lock(mu_);
    room = MakeRoom(*policy_, chunk.id, size, s.capacity, &s.used,
                    [&](const ChunkId& victim) { return EvictLocked(victim); });
    if (room) {
      // The index first; rolled back below if the rename fails.
      index_[chunk.id] = size;
      index_bytes_ += size;
      policy_->OnPut(chunk.id);
      s.used += size;
    }
    // Out of victims while the ledger counts chunks this process never saw (other processes
    // published them): learn them from the directory once and try again.
    if (room || attempt == 1 || index_bytes_ >= s.used) break;
    lock.unlock();
    if (!RebuildLocked(*ledger, /*empty_on_overflow=*/false).ok()) break;
  }
  Status saved = ledger->Save();
  Status published = room && saved.ok() ? store_->Publish(*staged) : saved;
  if (room && !published.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    index_.erase(chunk.id);
    index_bytes_ -= std::min(index_bytes_, size);
    policy_->OnDelete(chunk.id);
    s.used -= std::min(s.used, size);
    room = false;
  }
  if (!room) {
    store_->Discard(*staged);
    (void)ledger->Save();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_ = s.used;
    if (room)
      ++stats_.stored;
    else
      ++stats_.skipped;
  }
  if (room && options_.on_event) options_.on_event("published");
  return room;
}

void Cache::Drop(const ChunkId& id) {
  Result<LedgerLock> ledger = ledger_->Lock();
  if (!ledger.ok() || !SyncWithLedger(*ledger).ok()) return;
  Result<uint64_t> freed = store_->Delete(id);
  LedgerState& s = ledger->state();
  if (freed.ok()) s.used -= std::min(s.used, *freed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(id);
    if (it != index_.end()) {
      index_bytes_ -= std::min(index_bytes_, it->second);
      index_.erase(it);
      policy_->OnDelete(id);
    }
    ++stats_.damaged;
    used_ = s.used;
  }
  (void)ledger->Save();
}

void Cache::NoteOnDisk(const ChunkId& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(id) > 0) return;
  }
  // Published by another process: make it known to this process's index and policy.
  Result<uint64_t> bytes = store_->FileBytes(id);
  if (!bytes.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!index_.emplace(id, *bytes).second) return;
  index_bytes_ += *bytes;
  policy_->OnPut(id);
}

Status Cache::Clear() {
  if (!bypassed_.ok()) return bypassed_;
  SLUICE_ASSIGN_OR_RETURN(LedgerLock ledger, ledger_->Lock());
  if (ledger.state().capacity == 0) ledger.state().capacity = capacity_;
  SLUICE_ASSIGN_OR_RETURN(std::vector<StoredChunk> chunks, store_->Scan(true));
  Status first;
  for (const StoredChunk& c : chunks) {
    Result<uint64_t> r = store_->Delete(c.id);
    if (!r.ok() && first.ok()) first = r.status();
  }
  ledger.state().used = 0;
  ++ledger.state().generation;
  SLUICE_RETURN_IF_ERROR(SyncWithLedger(ledger));
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_ = 0;
  }
  SLUICE_RETURN_IF_ERROR(ledger.Save());
  return first;
}

}  // namespace sluice::io::cache

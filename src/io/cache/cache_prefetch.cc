// The cache coordinator's plan side: the plan from the order, prefetch along it within the
// capacity and a fetch/bandwidth budget, and the poller that waits for other processes'
// fetches and for cancelled readers (docs/cache.md, "Prefetch").
#include <algorithm>

#include "chunk_locks.h"
#include "chunk_store.h"
#include "sluice/io/cache/cache.h"

namespace sluice::io::cache {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

uint64_t Cache::SetPlan(CachePlan plan) {
  if (!bypassed_.ok()) return 0;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = ++plan_id_;
    planned_.clear();
    planned_at_.clear();
    std::vector<PlannedUse> uses;
    uses.reserve(plan.uses.size());
    for (const CachePlan::Use& u : plan.uses) {
      if (u.chunk < plan.chunks.size()) uses.push_back({plan.chunks[u.chunk].id, u.window});
    }
    for (ChunkRef& c : plan.chunks) {
      ChunkId id = c.id;
      planned_at_.emplace(std::make_pair(c.remote.get(), c.offset), id);
      planned_.emplace(id, std::move(c));
    }
    future_->SetPlan(uses);
    next_prefetch_at_ = Clock::now();
  }
  SchedulePrefetch();
  return id;
}

void Cache::WithdrawPlan(uint64_t id) {
  if (!bypassed_.ok() || id == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (id != plan_id_) return;  // a later plan replaced it: that one's reader still reads
  planned_.clear();
  planned_at_.clear();
  future_->SetPlan({});  // no plan: SchedulePrefetch starts nothing
}

bool Cache::WorthPrefetchLocked(const ChunkId& id, uint64_t bytes) {
  uint64_t in_flight = 0;
  for (const auto& [fid, f] : flights_) in_flight += f->chunk.length;
  if (used_ + in_flight + bytes <= capacity_) return true;
  // No free room: only if the policy would give up a chunk for it (needed later than it).
  return policy_->PickVictim(id).has_value();
}

void Cache::ExtendGroupLocked(std::vector<FlightPtr>* group, uint64_t* group_bytes) {
  if (stopping_ || options_.prefetch_fetches == 0 || !future_->has_plan()) return;
  for (;;) {
    const ChunkRef& last = group->back()->chunk;
    auto at = planned_at_.find({last.remote.get(), last.offset + last.length});
    if (at == planned_at_.end()) return;
    const ChunkId& id = at->second;
    const ChunkRef& next = planned_.at(id);
    if (index_.count(id) > 0 || flights_.count(id) > 0 ||
        *group_bytes + next.length > kFetchGroupBytes || !WorthPrefetchLocked(id, next.length)) {
      return;
    }
    auto f = std::make_shared<Flight>();
    f->chunk = next;
    f->prefetch = true;
    flights_[id] = f;
    ++prefetching_;
    ChargePrefetchLocked(next.length);  // the bandwidth cap counts them too
    *group_bytes += next.length;
    group->push_back(std::move(f));
  }
}

void Cache::SchedulePrefetch() {
  if (options_.prefetch_fetches == 0) return;
  // Each chunk started here takes the planned chunks that continue it in its remote file
  // along (ExtendGroupLocked): an unshuffled read's chunks of a shard, a window's neighbours.
  std::vector<std::vector<FlightPtr>> groups;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || !future_->has_plan() || prefetching_ >= options_.prefetch_fetches) return;
    const auto now = Clock::now();
    for (const ChunkId& id : future_->Upcoming(options_.prefetch_windows)) {
      if (prefetching_ >= options_.prefetch_fetches) break;
      if (index_.count(id) > 0 || flights_.count(id) > 0) continue;
      auto p = planned_.find(id);
      if (p == planned_.end() || !WorthPrefetchLocked(id, p->second.length)) continue;
      if (options_.prefetch_bytes_per_second > 0) {
        if (now < next_prefetch_at_) break;  // the poller comes back
        next_prefetch_at_ = now;             // not before: the check above
        ChargePrefetchLocked(p->second.length);
      }
      auto f = std::make_shared<Flight>();
      f->chunk = p->second;
      f->prefetch = true;
      flights_[id] = f;
      ++prefetching_;
      std::vector<FlightPtr> group{std::move(f)};
      uint64_t bytes = p->second.length;
      ExtendGroupLocked(&group, &bytes);
      groups.push_back(std::move(group));
    }
  }
  for (std::vector<FlightPtr>& group : groups) {
    if (group.size() == 1) {
      Submit([this, f = std::move(group[0])] { Acquire(f); });
    } else {
      Submit([this, group = std::move(group)]() mutable { AcquireGroup(std::move(group)); });
    }
  }
}

void Cache::ChargePrefetchLocked(uint64_t bytes) {
  if (options_.prefetch_bytes_per_second == 0) return;
  next_prefetch_at_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
      static_cast<double>(bytes) / static_cast<double>(options_.prefetch_bytes_per_second)));
}

void Cache::PollLoop() {
  auto delay = std::chrono::milliseconds(1);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    poll_cv_.wait_for(lock, delay);
    if (stopping_) break;
    std::vector<FlightPtr> waiting;
    std::vector<Waiter> cancelled;
    for (auto& [id, f] : flights_) {
      auto& ws = f->waiters;
      for (auto it = ws.begin(); it != ws.end();) {
        if (it->cancel != nullptr && it->cancel->cancelled()) {
          cancelled.push_back(std::move(*it));
          it = ws.erase(it);
        } else {
          ++it;
        }
      }
      if (f->state == FlightState::kWaitingForNode) waiting.push_back(f);
    }
    const bool rate_limited = options_.prefetch_bytes_per_second > 0 && future_->has_plan();
    const bool busy = !flights_.empty();
    lock.unlock();
    for (Waiter& w : cancelled) w.done(Cancelled("cache read cancelled"));
    for (FlightPtr& f : waiting) PollWaiting(f);
    if (rate_limited) SchedulePrefetch();
    lock.lock();
    if (!waiting.empty()) {
      delay = std::min(delay * 2, std::chrono::milliseconds(20));
    } else {
      delay = busy ? std::chrono::milliseconds(10) : std::chrono::milliseconds(1000);
    }
  }
}

void Cache::PollWaiting(const FlightPtr& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (f->state != FlightState::kWaitingForNode) return;
    // Nobody wants it any more (all readers cancelled) and it is no prefetch: give it up.
    if (f->waiters.empty() && !f->prefetch) {
      EndFlightLocked(f);
      return;
    }
  }
  Result<bool> got = locks_->TryLock(f->chunk.id);
  const bool timed_out = Clock::now() - f->waiting_since >
                         std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(options_.lock_wait_seconds));
  if (got.ok() && !*got && !timed_out) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    f->state = FlightState::kLocking;
    f->holds_node_lock = got.ok() && *got;
    if (!f->holds_node_lock) ++stats_.lock_timeouts;
  }
  Submit([this, f] { AfterLock(f); });
}

}  // namespace sluice::io::cache

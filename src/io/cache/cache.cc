// The cache coordinator's read path: a read is a hit on disk, or joins the one flight of its
// chunk in this process, which waits for the node lock (another process fetching), re-checks
// the disk, fetches from the remote store and stores the chunk (docs/cache.md, "Reads").
#include "sluice/io/cache/cache.h"

#include <algorithm>

#include "chunk_locks.h"
#include "chunk_store.h"
#include "ledger.h"
#include "time_bound_store.h"

namespace sluice::io::cache {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Result<std::shared_ptr<Cache>> Cache::Open(const CacheOptions& options) {
  std::string dir = options.dir.empty() ? DefaultCacheDir() : options.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::shared_ptr<Cache> cache(new Cache(options, std::move(dir)));
  Status s = cache->Init();
  if (!s.ok()) return s.WithContext("cache " + cache->dir());
  return cache;
}

std::shared_ptr<Cache> Cache::Bypassing(const CacheOptions& options, Status why) {
  std::string dir = options.dir.empty() ? DefaultCacheDir() : options.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::shared_ptr<Cache> cache(new Cache(options, std::move(dir)));
  cache->bypassed_ = why.ok() ? Internal("bypassed") : std::move(why);
  cache->stats_.dir = cache->dir_;
  cache->stats_.policy = "none";
  std::string reason = cache->bypassed_.message();
  const std::string context = "cache " + cache->dir_ + ": ";  // what Open adds
  if (reason.compare(0, context.size(), context) == 0) reason.erase(0, context.size());
  cache->stats_.bypassed = std::move(reason);
  return cache;
}

Cache::Cache(const CacheOptions& options, std::string dir)
    : options_(options), dir_(std::move(dir)) {}

Status Cache::Init() {
  SLUICE_RETURN_IF_ERROR(LocalFileSystem()->CreateDirs(dir_));
  store_ = std::make_unique<ChunkStore>(dir_ + "/chunks", ChunkStoreOptions{options_.sync});
  SLUICE_RETURN_IF_ERROR(store_->Init());
  bounded_ = std::make_unique<TimeBoundChunkStore>(store_.get(), options_.disk_timeout_seconds,
                                                   std::max<uint32_t>(2, options_.io_threads / 2));
  SLUICE_ASSIGN_OR_RETURN(ledger_, Ledger::Open(dir_ + "/ledger"));
  SLUICE_ASSIGN_OR_RETURN(locks_, ChunkLocks::Open(dir_ + "/locks"));
  auto future = std::make_unique<FuturePolicy>(FuturePolicyOptions{options_.lag_windows});
  future_ = future.get();
  policy_ = std::move(future);
  stats_.dir = dir_;
  stats_.policy = std::string(policy_->name());
  SLUICE_RETURN_IF_ERROR(OpenLedger());
  ghost_ = std::make_unique<CacheSimulator>(&ghost_lru_, capacity_);
  io_ = std::make_unique<ThreadPool>(std::max<uint32_t>(1, options_.io_threads));
  poller_ = std::thread([this] { PollLoop(); });
  return Status::OK();
}

Cache::~Cache() {
  std::vector<Waiter> abandoned;
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    poll_cv_.notify_all();
  }
  if (poller_.joinable()) poller_.join();
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Flights waiting for another process would wait up to lock_wait_seconds: give up on them.
    for (auto it = flights_.begin(); it != flights_.end();) {
      if (it->second->state != FlightState::kWaitingForNode) {
        ++it;
        continue;
      }
      for (Waiter& w : it->second->waiters) abandoned.push_back(std::move(w));
      it = flights_.erase(it);
    }
  }
  for (Waiter& w : abandoned) w.done(Cancelled("cache " + dir_ + " closed"));
  Drain();
  io_.reset();
}

void Cache::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return pending_ == 0 && flights_.empty(); });
}

void Cache::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  io_->Submit([this, task = std::move(task)] {
    task();
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) idle_cv_.notify_all();
  });
}

void Cache::Read(const ChunkRef& chunk, uint64_t begin, uint64_t n, ReadCallback done,
                 const IoContext& context) {
  if (!bypassed_.ok()) return ReadBypassing(chunk, begin, n, std::move(done), context);
  Waiter w{begin, n, std::move(done), context.cancel, Clock::now(), false, context.buffer};
  bool moved;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.reads;
    const uint64_t window = future_->current_window();
    policy_->OnGet(chunk.id);
    ghost_->Access(chunk.id, chunk.length);
    moved = future_->current_window() != window;
    if (JoinLocked(chunk.id, &w)) {
      if (moved) poll_cv_.notify_one();
      return;
    }
  }
  if (moved) SchedulePrefetch();
  Submit([this, chunk, w = std::move(w)]() mutable { ReadFromDisk(chunk, std::move(w)); });
}

void Cache::ReadBypassing(const ChunkRef& chunk, uint64_t begin, uint64_t n, ReadCallback done,
                          const IoContext& context) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.reads;
    ++stats_.misses;
  }
  begin = std::min(begin, chunk.length);
  n = std::min(n, chunk.length - begin);
  chunk.remote->ReadAsync(chunk.offset + begin, n, std::move(done), context);
}

bool Cache::JoinLocked(const ChunkId& id, Waiter* w) {
  auto it = flights_.find(id);
  if (it == flights_.end()) return false;
  Flight& f = *it->second;
  if (f.state == FlightState::kStoring) {
    // Fetched already and being written: serve the bytes in memory.
    auto bytes = f.bytes;
    ++pending_;
    io_->Submit([this, bytes, w = std::move(*w)]() mutable {
      std::vector<Waiter> one;
      one.push_back(std::move(w));
      Complete(std::move(one), bytes, Served::kHit);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) idle_cv_.notify_all();
    });
    return true;
  }
  w->joined = true;
  f.waiters.push_back(std::move(*w));
  return true;
}

void Cache::ReadFromDisk(const ChunkRef& chunk, Waiter w) {
  Result<std::string> r = bounded_->Read(chunk.id, chunk.key, chunk.length, w.begin, w.n, w.buffer);
  if (r.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.hits;
    }
    w.done(std::move(*r));  // exactly the bytes asked for: handed over, not copied
    NoteOnDisk(chunk.id);
    return;
  }
  if (r.status().code() == StatusCode::kDataLoss) {
    Drop(chunk.id);
  } else if (r.status().code() != StatusCode::kNotFound) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.read_errors;
  }
  Miss(chunk, std::move(w));
}

void Cache::Miss(const ChunkRef& chunk, Waiter w) {
  std::vector<FlightPtr> group{std::make_shared<Flight>()};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (JoinLocked(chunk.id, &w)) return;
    FlightPtr& f = group[0];
    f->chunk = chunk;
    f->waiters.push_back(std::move(w));
    flights_[chunk.id] = f;
    uint64_t bytes = chunk.length;
    ExtendGroupLocked(&group, &bytes);
  }
  if (group.size() == 1) return Acquire(std::move(group[0]));
  AcquireGroup(std::move(group));
}

void Cache::Acquire(FlightPtr f) {
  if (LockOrWait(f)) AfterLock(std::move(f));
}

void Cache::AcquireGroup(std::vector<FlightPtr> group) {
  std::vector<FlightPtr> fetch;
  for (FlightPtr& f : group) {
    if (LockOrWait(f) && NeedsFetch(f)) fetch.push_back(std::move(f));
  }
  FetchGroup(std::move(fetch));
}

bool Cache::LockOrWait(const FlightPtr& f) {
  Result<bool> got = locks_->TryLock(f->chunk.id);
  if (got.ok() && !*got) {
    std::lock_guard<std::mutex> lock(mu_);
    f->state = FlightState::kWaitingForNode;
    f->waiting_since = Clock::now();
    poll_cv_.notify_one();
    return false;
  }
  // A lock file we cannot use makes single flight best effort, not reads impossible.
  f->holds_node_lock = got.ok();
  return true;
}

void Cache::AfterLock(FlightPtr f) {
  if (NeedsFetch(f)) Fetch(std::move(f));
}

bool Cache::NeedsFetch(const FlightPtr& f) {
  const ChunkRef& c = f->chunk;
  // Re-check after locking: the process that held the lock may have published the chunk.
  bool wanted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wanted = !f->waiters.empty();
    f->state = FlightState::kLocking;
  }
  if (!wanted && store_->FileBytes(c.id).ok()) {
    NoteOnDisk(c.id);
    if (FinishIfUnwanted(f)) return false;
    wanted = true;
  }
  if (wanted) {
    Result<std::string> r = bounded_->Read(c.id, c.key, c.length, 0, c.length);
    if (r.ok()) {
      NoteOnDisk(c.id);
      Finish(f, std::make_shared<const std::string>(std::move(*r)), Served::kJoined);
      return false;
    }
    if (r.status().code() == StatusCode::kDataLoss) Drop(c.id);
  }
  return true;
}

void Cache::FetchGroup(std::vector<FlightPtr> group) {
  if (group.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const FlightPtr& f : group) f->state = FlightState::kFetching;
    ++pending_;
  }
  if (options_.on_event) {
    for (size_t i = 0; i < group.size(); ++i) options_.on_event("fetch");
  }
  IoContext context;
  context.executor = io_.get();  // local and NFS "remotes" block one of the cache's threads
  const RandomAccessFile& remote = *group[0]->chunk.remote;
  // Off the remote store's thread (an HTTP engine's loop) before touching the disk.
  auto finished = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) idle_cv_.notify_all();
  };
  if (group.size() == 1) {
    FlightPtr f = std::move(group[0]);
    remote.ReadAsync(
        f->chunk.offset, f->chunk.length,
        [this, f, finished](Result<std::string> got) {
          io_->Submit([this, f, finished, got = std::move(got)]() mutable {
            OnFetched(f, std::move(got));
            finished();
          });
        },
        context);
    return;
  }
  // One call: a remote that merges ranges (S3) makes it one request (on RGW a request costs
  // the server about as much as a megabyte of body).
  std::vector<ByteRange> ranges;
  for (const FlightPtr& f : group) ranges.push_back({f->chunk.offset, f->chunk.length});
  remote.ReadRangesAsync(
      std::move(ranges),
      [this, group, finished](Result<std::vector<std::string>> got) {
        io_->Submit([this, group, finished, got = std::move(got)]() mutable {
          for (size_t i = 0; i < group.size(); ++i) {
            Result<std::string> one = !got.ok()         ? Result<std::string>(got.status())
                                      : i < got->size() ? Result<std::string>(std::move((*got)[i]))
                                                        : Result<std::string>(std::string());
            OnFetched(group[i], std::move(one), /*schedule=*/false);
          }
          SchedulePrefetch();
          finished();
        });
      },
      context);
}

void Cache::OnFetched(FlightPtr f, Result<std::string> got, bool schedule) {
  const ChunkRef& c = f->chunk;
  if (got.ok() && got->size() != c.length) {
    got = DataLoss(c.remote->path() + ": read " + std::to_string(got->size()) + " of " +
                   std::to_string(c.length) + " bytes at offset " + std::to_string(c.offset) +
                   " (the file changed since it was opened)");
  }
  if (!got.ok()) {
    Finish(f, got.status(), Served::kMiss, schedule);
    return;
  }
  auto bytes = std::make_shared<const std::string>(std::move(*got));
  std::vector<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    f->state = FlightState::kStoring;
    f->bytes = bytes;
    waiters = std::move(f->waiters);
    f->waiters.clear();
    ++stats_.fetches;
    stats_.fetched_bytes += bytes->size();
    if (f->prefetch) {
      ++stats_.prefetches;
      stats_.prefetched_bytes += bytes->size();
    }
  }
  Complete(std::move(waiters), bytes, Served::kMiss);  // readers first, then the disk
  Store(c, bytes);
  Finish(f, bytes, Served::kMiss, schedule);
}

bool Cache::FinishIfUnwanted(const FlightPtr& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!f->waiters.empty()) return false;
    EndFlightLocked(f);
  }
  if (f->holds_node_lock) locks_->Unlock(f->chunk.id);
  SchedulePrefetch();
  return true;
}

void Cache::EndFlightLocked(const FlightPtr& f) {
  auto it = flights_.find(f->chunk.id);
  if (it != flights_.end() && it->second == f) flights_.erase(it);
  if (f->prefetch) --prefetching_;
  if (flights_.empty() && pending_ == 0) idle_cv_.notify_all();
}

void Cache::Finish(FlightPtr f, const Result<std::shared_ptr<const std::string>>& bytes, Served how,
                   bool schedule) {
  std::vector<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters = std::move(f->waiters);
    f->waiters.clear();
    EndFlightLocked(f);
  }
  if (f->holds_node_lock) locks_->Unlock(f->chunk.id);
  Complete(std::move(waiters), bytes, how);
  if (schedule) SchedulePrefetch();
}

void Cache::Complete(std::vector<Waiter> waiters,
                     const Result<std::shared_ptr<const std::string>>& bytes, Served how) {
  if (waiters.empty()) return;
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Waiter& w : waiters) {
      Served as = how == Served::kMiss && w.joined ? Served::kJoined : how;
      if (as == Served::kHit) ++stats_.hits;
      if (as == Served::kJoined) ++stats_.joined;
      if (as == Served::kMiss) ++stats_.misses;
      if (as != Served::kHit) stats_.fetch_wait_seconds += Seconds(now - w.since);
    }
  }
  for (Waiter& w : waiters) {
    if (!bytes.ok()) {
      w.done(bytes.status());
      continue;
    }
    const std::string& all = **bytes;
    const uint64_t begin = std::min<uint64_t>(w.begin, all.size());
    w.done(all.substr(begin, std::min<uint64_t>(w.n, all.size() - begin)));
  }
}

}  // namespace sluice::io::cache

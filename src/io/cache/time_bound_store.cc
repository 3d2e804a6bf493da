#include "time_bound_store.h"

#include <future>

namespace sluice::io::cache {

struct TimeBoundChunkStore::Op {
  std::atomic<bool> claimed{false};  // by the work finishing, or by the watchdog
  std::function<void(const std::shared_ptr<Op>&)> late;
  std::multimap<Clock::time_point, std::shared_ptr<Op>>::iterator deadline;
  bool has_deadline = false;
};

TimeBoundChunkStore::TimeBoundChunkStore(const ChunkStore* store, double timeout_seconds,
                                         uint32_t threads)
    : store_(store),
      timeout_seconds_(timeout_seconds),
      threads_(std::max<uint32_t>(1, threads)),
      pool_(std::make_unique<ThreadPool>(threads_)) {
  if (timeout_seconds_ > 0) watchdog_ = std::thread([this] { WatchLoop(); });
}

TimeBoundChunkStore::~TimeBoundChunkStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (watchdog_.joinable()) watchdog_.join();
  pool_.reset();
}

bool TimeBoundChunkStore::Claim(const std::shared_ptr<Op>& op) const {
  if (op->claimed.exchange(true)) {
    stuck_.fetch_sub(1);  // the watchdog reported it late; it is no longer stuck
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (op->has_deadline) {
    deadlines_.erase(op->deadline);
    op->has_deadline = false;
  }
  return true;
}

void TimeBoundChunkStore::Run(std::function<void(const std::shared_ptr<Op>&)> work,
                              std::function<void(const std::shared_ptr<Op>&)> late) const {
  auto op = std::make_shared<Op>();
  op->late = std::move(late);
  if (timeout_seconds_ > 0) {
    if (stuck_.load() >= threads_) {
      op->claimed = true;  // nothing will run: report at once
      return op->late(op);
    }
    auto due = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds_));
    std::lock_guard<std::mutex> lock(mu_);
    op->deadline = deadlines_.emplace(due, op);
    op->has_deadline = true;
    if (op->deadline == deadlines_.begin()) cv_.notify_all();
  }
  pool_->Submit([op, work = std::move(work)] { work(op); });
}

void TimeBoundChunkStore::WatchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (deadlines_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = deadlines_.begin();
    if (Clock::now() < first->first) {
      cv_.wait_until(lock, first->first);
      continue;
    }
    std::shared_ptr<Op> op = first->second;
    deadlines_.erase(first);
    op->has_deadline = false;
    stuck_.fetch_add(1);  // before the claim: the work's failed Claim() takes it back
    if (op->claimed.exchange(true)) {
      stuck_.fetch_sub(1);  // finished just now
      continue;
    }
    timeouts_.fetch_add(1);
    lock.unlock();
    op->late(op);
    lock.lock();
  }
}

void TimeBoundChunkStore::ReadAsync(const ChunkId& id, std::string key, uint64_t length,
                                    uint64_t begin, uint64_t n, ReadDone done) const {
  auto shared_done = std::make_shared<ReadDone>(std::move(done));
  const std::string path = store_->PathOf(id);
  Run(
      [this, id, key = std::move(key), length, begin, n, shared_done](const auto& op) {
        Result<std::string> r = store_->Read(id, key, length, begin, n);
        if (Claim(op)) (*shared_done)(std::move(r));
      },
      [this, path, shared_done](const auto&) {
        (*shared_done)(IoError("read " + path + ": no answer from the cache disk within " +
                               std::to_string(timeout_seconds_) + " s (or it hangs)"));
      });
}

Result<std::string> TimeBoundChunkStore::Read(const ChunkId& id, std::string_view key,
                                              uint64_t length, uint64_t begin,
                                              uint64_t n) const {
  std::promise<Result<std::string>> p;
  ReadAsync(id, std::string(key), length, begin, n,
            [&p](Result<std::string> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

Result<StagedChunk> TimeBoundChunkStore::Stage(const ChunkId& id, std::string_view key,
                                               std::shared_ptr<const std::string> bytes) const {
  auto p = std::make_shared<std::promise<Result<StagedChunk>>>();
  const std::string path = store_->PathOf(id);
  Run(
      [this, id, k = std::string(key), bytes, p](const auto& op) {
        Result<StagedChunk> r = store_->Stage(id, k, *bytes);
        if (Claim(op)) return p->set_value(std::move(r));
        if (r.ok()) store_->Discard(*r);  // given up on: nobody will publish it
      },
      [this, path, p](const auto&) {
        p->set_value(IoError("write " + path + ": no answer from the cache disk within " +
                             std::to_string(timeout_seconds_) + " s (or it hangs)"));
      });
  return p->get_future().get();
}

}  // namespace sluice::io::cache

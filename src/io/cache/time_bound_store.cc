#include "time_bound_store.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace sluice::io::cache {

TimeBoundChunkStore::TimeBoundChunkStore(const ChunkStore* store, double timeout_seconds,
                                         uint32_t threads)
    : store_(store), timeout_seconds_(timeout_seconds), threads_(std::max<uint32_t>(1, threads)) {
  if (timeout_seconds_ > 0) pool_ = std::make_unique<ThreadPool>(threads_);
}

template <typename T>
Result<T> TimeBoundChunkStore::Bounded(std::string what, std::function<Result<T>()> op,
                                       std::function<void(Result<T>&)> abandon) const {
  if (pool_ == nullptr) return op();
  if (stuck_.load() >= threads_) {
    return IoError(what + ": every cache disk thread is stuck on an earlier operation");
  }
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<T>> result;
    bool abandoned = false;
  };
  auto shared = std::make_shared<Shared>();
  pool_->Submit([this, shared, op = std::move(op), abandon = std::move(abandon)] {
    Result<T> r = op();
    std::lock_guard<std::mutex> lock(shared->mu);
    if (shared->abandoned) {
      stuck_.fetch_sub(1);
      return abandon(r);
    }
    shared->result.emplace(std::move(r));
    shared->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(shared->mu);
  if (shared->cv.wait_for(lock, std::chrono::duration<double>(timeout_seconds_),
                          [&] { return shared->result.has_value(); })) {
    return std::move(*shared->result);
  }
  shared->abandoned = true;
  stuck_.fetch_add(1);
  timeouts_.fetch_add(1);
  return IoError(what + ": no answer from the cache disk within " +
                 std::to_string(timeout_seconds_) + " s");
}

Result<std::string> TimeBoundChunkStore::Read(
    const ChunkId& id, std::string_view key, uint64_t length, uint64_t begin, uint64_t n,
    const std::function<std::string(size_t)>& buffer) const {
  std::string k(key);
  return Bounded<std::string>(
      "read " + store_->PathOf(id),
      [this, id, k, length, begin, n, buffer] {
        return store_->Read(id, k, length, begin, n, buffer);
      },
      [](Result<std::string>&) {});
}

Result<StagedChunk> TimeBoundChunkStore::Stage(const ChunkId& id, std::string_view key,
                                               std::shared_ptr<const std::string> bytes) const {
  std::string k(key);
  return Bounded<StagedChunk>(
      "write " + store_->PathOf(id), [this, id, k, bytes] { return store_->Stage(id, k, *bytes); },
      [this](Result<StagedChunk>& late) {
        if (late.ok()) store_->Discard(*late);  // nobody will publish it
      });
}

}  // namespace sluice::io::cache

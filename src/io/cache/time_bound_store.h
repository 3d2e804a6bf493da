// Deadlines for the page store (STYLE.md "Cache tier": timeouts come from a wrapper around the
// store, as alluxio's TimeBoundPageStore). Reads and writes of chunk files run on the wrapper's
// own threads; one that misses its deadline is reported as failed (the coordinator counts a
// read as a miss and a write as a skipped store) while it goes on in the background. While all
// `threads` are stuck on a hung disk, further operations fail at once: a dead cache disk makes
// the cache useless, never the reader hung.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "chunk_store.h"
#include "sluice/base/thread_pool.h"

namespace sluice::io::cache {

class TimeBoundChunkStore {
 public:
  using ReadDone = std::function<void(Result<std::string>)>;
  // `timeout_seconds` <= 0: no deadline.
  TimeBoundChunkStore(const ChunkStore* store, double timeout_seconds, uint32_t threads);
  // Waits for operations still running (stuck ones included: see the class comment).
  ~TimeBoundChunkStore();

  // Runs the read on the wrapper's threads; `done` runs exactly once, on one of them, or on
  // the watchdog's thread with an IoError when the deadline passes first.
  void ReadAsync(const ChunkId& id, std::string key, uint64_t length, uint64_t begin, uint64_t n,
                 ReadDone done) const;
  Result<std::string> Read(const ChunkId& id, std::string_view key, uint64_t length,
                           uint64_t begin, uint64_t n) const;
  Result<StagedChunk> Stage(const ChunkId& id, std::string_view key,
                            std::shared_ptr<const std::string> payload) const;
  uint64_t timeouts() const { return timeouts_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Op;
  // Runs `work` on the pool and, if the deadline passes first, `late` on the watchdog's
  // thread. `work` calls Claim() when done: true when it was in time (it reports its result),
  // false when `late` already reported (it drops its result).
  void Run(std::function<void(const std::shared_ptr<Op>&)> work,
           std::function<void(const std::shared_ptr<Op>&)> late) const;
  bool Claim(const std::shared_ptr<Op>& op) const;
  void WatchLoop();

  const ChunkStore* store_;
  const double timeout_seconds_;
  const uint32_t threads_;
  std::unique_ptr<ThreadPool> pool_;
  mutable std::atomic<uint32_t> stuck_{0};  // operations past their deadline, still running
  mutable std::atomic<uint64_t> timeouts_{0};

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::multimap<Clock::time_point, std::shared_ptr<Op>> deadlines_;  // guarded by mu_
  bool stopping_ = false;                                                   // guarded by mu_
  std::thread watchdog_;
};

}  // namespace sluice::io::cache

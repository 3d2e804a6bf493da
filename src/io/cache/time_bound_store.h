// Deadlines for the page store (the cache is best effort: timeouts come from a wrapper around the
// store, as alluxio's TimeBoundPageStore). Reads and writes of chunk files run on the wrapper's
// own threads; one that misses its deadline is reported as failed (the coordinator counts a
// read as a miss and a write as a skipped store) while it goes on in the background. While all
// `threads` are stuck on a hung disk, further operations fail at once: a dead cache disk makes
// the cache useless, never the reader hung.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "chunk_store.h"
#include "sluice/base/thread_pool.h"

namespace sluice::io::cache {

class TimeBoundChunkStore {
 public:
  // `timeout_seconds` <= 0: no deadline (operations run on the caller's thread).
  TimeBoundChunkStore(const ChunkStore* store, double timeout_seconds, uint32_t threads);
  Result<std::string> Read(const ChunkId& id, std::string_view key, uint64_t length, uint64_t begin,
                           uint64_t n,
                           const std::function<std::string(size_t)>& buffer = nullptr) const;
  Result<StagedChunk> Stage(const ChunkId& id, std::string_view key,
                            std::shared_ptr<const std::string> payload) const;
  uint64_t timeouts() const { return timeouts_.load(); }

 private:
  template <typename T>
  Result<T> Bounded(std::string what, std::function<Result<T>()> op,
                    std::function<void(Result<T>&)> abandon) const;

  const ChunkStore* store_;
  const double timeout_seconds_;
  const uint32_t threads_;
  std::unique_ptr<ThreadPool> pool_;
  mutable std::atomic<uint32_t> stuck_{0};  // operations past their deadline, still running
  mutable std::atomic<uint64_t> timeouts_{0};
};

}  // namespace sluice::io::cache

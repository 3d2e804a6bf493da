// Per-chunk locks shared by the processes of a node (docs/cache.md, "Single flight"): an
// open-file-description byte-range lock (fcntl F_OFD_SETLK) on one byte of the file "locks",
// at an offset derived from the chunk id. The process that holds a chunk's lock is its one
// fetcher on the node; the kernel drops the lock when that process dies, so a crashed
// fetcher's chunk is taken over by the next process that tries. Threads of one process share
// the descriptor and so the locks: the coordinator keeps one flight per chunk in-process.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "sluice/base/status.h"
#include "sluice/io/cache/eviction.h"

namespace sluice::io::cache {

class ChunkLocks {
 public:
  static Result<std::unique_ptr<ChunkLocks>> Open(const std::string& path);
  ~ChunkLocks();
  ChunkLocks(const ChunkLocks&) = delete;
  ChunkLocks& operator=(const ChunkLocks&) = delete;

  // True when this process now holds the lock of `id` (never blocks); false when another
  // process holds it.
  Result<bool> TryLock(const ChunkId& id);
  void Unlock(const ChunkId& id);

 private:
  ChunkLocks(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  static uint64_t OffsetOf(const ChunkId& id) { return id.lo & ((uint64_t{1} << 30) - 1); }

  std::string path_;
  int fd_;
  std::mutex mu_;
  // Holds per lock byte in this process: two chunks of one process whose bytes collide
  // share the byte, released when the last lets go.
  std::unordered_map<uint64_t, uint32_t> held_;  // guarded by mu_
};

}  // namespace sluice::io::cache

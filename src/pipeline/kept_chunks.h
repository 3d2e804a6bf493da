// Decoded chunks a dataset keeps between its iterators (docs/pipeline.md, "Decoded chunks
// kept between epochs").
//
// A read() whose decoded chunks all fit in its iterators' chunk caches keeps them when an
// iterator ends, and the next iterator over the same read() (the next epoch, a restore, a
// shuffle or shard of the same read) starts with them instead of decoding them again: a
// compressed dataset that fits in memory is decoded once per process, not once per epoch.
// Between iterators the kept bytes are charged to no pipeline's budget; an iterator that
// takes them charges them to its own. At most `max_bytes` of decoded bytes are kept (the
// chunks' record tables, 8 bytes per record, come on top).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "context.h"
#include "sluice/format/shard_chunks.h"

namespace sluice::pipeline {

// A decoded chunk charged to a pipeline's memory budget (none while only KeptChunks holds
// it) for as long as anyone holds it. Its destructor gives the buffer back for reuse.
struct ChargedChunk {
  format::DecodedChunk chunk;
  MemoryBudget* budget = nullptr;
  uint64_t bytes = 0;  // chunk.memory_bytes() when charged
  ChargedChunk() = default;
  ChargedChunk(const ChargedChunk&) = delete;
  ChargedChunk& operator=(const ChargedChunk&) = delete;
  ~ChargedChunk();  // chunk_cache.cc
};

class KeptChunks {
 public:
  using Chunks = std::unordered_map<uint64_t, std::shared_ptr<ChargedChunk>>;  // by chunk

  // Called by each iterator of the read as it starts: whether one started before (the read
  // is being read again, so what it decodes now is worth keeping).
  bool StartIterator() { return started_.exchange(true, std::memory_order_relaxed); }

  // Everything kept, for one iterator: the next one finds nothing until this one Puts.
  Chunks Take() {
    std::lock_guard<std::mutex> g(mu_);
    bytes_ = 0;
    return std::exchange(chunks_, {});
  }
  // Keeps `chunks` (none charged to a budget, each held by nobody else) with those kept
  // already, as long as their decoded bytes stay within `max_bytes` (the measure the read
  // decides with: SnapshotChunks::decoded_bytes() against the cache's capacity); the rest are
  // dropped.
  void Put(Chunks chunks, uint64_t max_bytes) {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [index, data] : chunks) {
      const uint64_t decoded = data->chunk.bytes.size();
      if (chunks_.count(index) != 0 || bytes_ + decoded > max_bytes) continue;
      bytes_ += decoded;
      chunks_.emplace(index, std::move(data));
    }
  }

 private:
  std::atomic<bool> started_{false};
  std::mutex mu_;
  Chunks chunks_;       // guarded by mu_
  uint64_t bytes_ = 0;  // guarded by mu_: their decoded bytes
};

}  // namespace sluice::pipeline

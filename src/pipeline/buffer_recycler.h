// A process-wide pool of large byte buffers (std::string), reused across pipelines and
// iterators instead of fresh memory (docs/pipeline.md, "Memory budget").
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::pipeline {

// Byte buffers of decoded chunks, fetches and read tasks' packed records, kept for the next
// one, process-wide. A fresh buffer costs a page fault per 4 KiB page and std::string's zero
// fill on resize: in a profile of the default path (small zstd records, bench/order) that
// was ~20% of the time, and half of a first batch's; reading 200 MB from S3, each new
// iterator's read tasks grew their packed records anew (a sixth of the page faults). A
// recycled one is resized in place (shrinking writes nothing). Bounded: at most kMaxBuffers
// and kMaxRetainedBytes, outside any pipeline's memory budget.
class BufferRecycler {
 public:
  static BufferRecycler& Get() {
    static BufferRecycler* recycler = new BufferRecycler;  // never destroyed: used at exit
    return *recycler;
  }
  // A buffer for `bytes` bytes (a fetch's or a decode's): the smallest kept one already that
  // long (resizing it writes nothing), else the longest (only the difference is zero-filled).
  // A request below kMinBytes (a compressed chunk's fetch, typically) gets a fresh one: given
  // a decoded chunk's buffer, it would shrink it, and the next decode into it would zero-fill
  // the difference again (~3% of a restore's CPU on small zstd chunks).
  std::string Take(uint64_t bytes) {
    if (bytes < kMinBytes) return std::string();
    std::lock_guard<std::mutex> g(mu_);
    if (free_.empty()) return std::string();
    size_t pick = 0;
    for (size_t i = 1; i < free_.size(); ++i) {
      const uint64_t have = free_[i].size(), best = free_[pick].size();
      if (best >= bytes ? (have >= bytes && have < best) : have > best) pick = i;
    }
    std::string s = std::move(free_[pick]);
    free_[pick] = std::move(free_.back());
    free_.pop_back();
    retained_ -= s.capacity();
    return s;
  }
  void Give(std::string s) {
    if (s.capacity() < kMinBytes || s.capacity() > kMaxRetainedBytes / 4) return;
    std::lock_guard<std::mutex> g(mu_);
    if (free_.size() >= kMaxBuffers || retained_ + s.capacity() > kMaxRetainedBytes) return;
    retained_ += s.capacity();
    free_.push_back(std::move(s));
  }

 private:
  static constexpr size_t kMinBytes = 64 << 10;  // smaller ones come from malloc's free lists
  static constexpr size_t kMaxBuffers = 64;
  static constexpr uint64_t kMaxRetainedBytes = uint64_t{64} << 20;
  std::mutex mu_;
  std::vector<std::string> free_;  // guarded by mu_
  uint64_t retained_ = 0;          // guarded by mu_: capacity of free_
};

}  // namespace sluice::pipeline

// StreamWindow: a growable buffer holding a contiguous piece of a shard's uncompressed
// record stream, addressed by absolute stream offsets. A StreamSource appends to it; the
// record parser reads from it and hands out views into it (no per-record copy). A source
// that holds the whole stream in memory already (a memory-mapped uncompressed file) makes
// the window a view of it instead, and nothing is copied at all.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

namespace sluice::format {

class StreamWindow {
 public:
  // Stream offsets of the first held byte and one past the last committed byte.
  uint64_t begin() const { return base_ + begin_; }
  uint64_t end() const { return base_ + committed_; }
  // Pointer to the byte at stream `offset`, begin() <= offset <= end(). Invalidated by
  // Reserve().
  const char* At(uint64_t offset) const { return data_ + (offset - base_); }

  // Makes this (empty, never reserved) window a read-only view of `stream`, the whole stream,
  // all committed: the producer side is unusable from then on. `stream` must outlive the
  // window's use.
  void View(const char* stream, size_t n) {
    data_ = stream;
    committed_ = written_ = capacity_ = n;
  }

  // Producer side. Bytes are written after the committed ones; a source commits them (the
  // parser may use them) or rolls them back (e.g. the output of a zstd frame that failed).
  char* write_ptr() { return buf_.get() + written_; }
  size_t room() const { return capacity_ - written_; }
  size_t uncommitted() const { return written_ - committed_; }
  void Produced(size_t n) { written_ += n; }
  void Commit() { committed_ = written_; }
  void Rollback() { written_ = committed_; }

  // Consumer side: bytes before `offset` are no longer needed (offset <= end()).
  void Consume(uint64_t offset) {
    if (offset > begin()) begin_ = offset - base_;
  }

  // Makes room() >= n. Moves the held bytes to the front when that frees at least as many
  // bytes as it copies (so copying stays amortized O(1) per byte), else grows the buffer.
  // Invalidates every pointer into the window.
  void Reserve(size_t n) {
    if (room() >= n) return;
    size_t live = written_ - begin_;
    if (begin_ > 0 && begin_ >= live) {
      std::memmove(buf_.get(), buf_.get() + begin_, live);
      Shift();
      if (room() >= n) return;
    }
    size_t capacity = std::max({capacity_ * 2, live + n, size_t{64} << 10});
    auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
    if (live > 0) std::memcpy(bigger.get(), buf_.get() + begin_, live);
    buf_ = std::move(bigger);
    data_ = buf_.get();
    capacity_ = capacity;
    Shift();
  }

 private:
  // After moving [begin_, written_) to the front of the buffer.
  void Shift() {
    base_ += begin_;
    committed_ -= begin_;
    written_ -= begin_;
    begin_ = 0;
  }

  std::unique_ptr<char[]> buf_;
  const char* data_ = nullptr;  // buf_.get(), or the stream a View() shows
  size_t capacity_ = 0;
  uint64_t base_ = 0;     // stream offset of data_[0]
  size_t begin_ = 0;      // first byte still needed
  size_t committed_ = 0;  // end of the bytes the parser may read
  size_t written_ = 0;    // end of the bytes a source has produced
};

}  // namespace sluice::format

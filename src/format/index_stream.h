// IndexStream: a range of an index file read front to back through one buffer, with the
// CRC32C of the bytes consumed (IndexDirectory's scan at open, index_directory.cc).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "sluice/base/crc32c.h"
#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

inline constexpr size_t kScanChunkBytes = size_t{64} << 10;

// Reads [begin, end) of the index file front to back through one buffer of kScanChunkBytes,
// keeping the CRC32C of the bytes consumed.
class IndexStream {
 public:
  IndexStream(const io::RandomAccessFile* file, uint64_t begin, uint64_t end)
      : file_(file), end_(end), buf_(kScanChunkBytes, '\0'), base_(begin) {}

  uint64_t position() const { return base_ + pos_; }
  // The unread bytes from position() in the buffer, without reading more.
  ByteView Unread() const { return ByteView(buf_.data() + pos_, len_ - pos_); }
  // The unread bytes from position(): at least `want` (<= kScanChunkBytes) of them unless
  // the range ends first.
  Result<ByteView> Peek(size_t want);
  void Consume(size_t n) { pos_ += n; }
  // CRC32C of the bytes consumed since the previous call (or the start).
  uint32_t TakeCrc() {
    crc_ = crc32c::Extend(crc_, buf_.data() + crc_from_, pos_ - crc_from_);
    crc_from_ = pos_;
    return std::exchange(crc_, 0);
  }

 private:
  const io::RandomAccessFile* file_;
  const uint64_t end_;
  std::string buf_;
  uint64_t base_;        // file offset of buf_[0]
  size_t len_ = 0;       // bytes of buf_ filled
  size_t pos_ = 0;       // next byte to consume
  size_t crc_from_ = 0;  // first consumed byte not yet in crc_
  uint32_t crc_ = 0;
};

}  // namespace sluice::format

// CompressedInput: buffered sequential reads of a compressed shard through positional
// reads, with the file offset of every buffered byte known (for error messages and for
// resynchronising at a later frame).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

class CompressedInput {
 public:
  CompressedInput(const io::RandomAccessFile* file, size_t chunk_bytes)
      : file_(file), chunk_(std::max<size_t>(chunk_bytes, 4096)) {}

  const char* data() const { return buf_.data() + begin_; }
  size_t available() const { return end_ - begin_; }
  // File offset of data()[0].
  uint64_t offset() const { return buf_offset_ + begin_; }
  uint64_t file_size() const { return file_->size(); }
  // Nothing left to read from the file beyond what is buffered.
  bool exhausted() const { return buf_offset_ + end_ >= file_->size(); }
  void Consume(size_t n) { begin_ += n; }

  // Reads until available() >= n or the file ends. Keeps the unconsumed bytes.
  Status Fill(size_t n) {
    while (available() < n && !exhausted()) {
      size_t live = available();
      if (begin_ > 0 && begin_ >= live) {  // compact; copying stays amortized O(1) per byte
        std::memmove(buf_.data(), data(), live);
        buf_offset_ += begin_;
        end_ = live;
        begin_ = 0;
      }
      size_t want = std::max(chunk_, n - live);
      want = static_cast<size_t>(std::min<uint64_t>(want, file_->size() - (buf_offset_ + end_)));
      if (buf_.size() < end_ + want) buf_.resize(std::max(end_ + want, buf_.size() * 2));
      SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(buf_offset_ + end_, want, &buf_[end_]));
      if (got.empty()) {
        return DataLoss(file_->path() + ": file shrank while reading (size was " +
                        std::to_string(file_->size()) + ")");
      }
      if (got.data() != &buf_[end_]) std::memcpy(&buf_[end_], got.data(), got.size());
      end_ += got.size();
    }
    return Status::OK();
  }

  // Continues reading at file `offset`.
  void Seek(uint64_t offset) {
    if (offset >= buf_offset_ && offset <= buf_offset_ + end_) {
      begin_ = offset - buf_offset_;
    } else {
      buf_offset_ = offset;
      begin_ = end_ = 0;
    }
  }

 private:
  const io::RandomAccessFile* file_;
  size_t chunk_;
  std::string buf_;
  uint64_t buf_offset_ = 0;  // file offset of buf_[0]
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace sluice::format

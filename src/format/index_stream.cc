// IndexStream (index_stream.h): refilling its buffer.
#include "format/index_stream.h"

#include <algorithm>
#include <cstring>

namespace sluice::format {

Result<ByteView> IndexStream::Peek(size_t want) {
  if (len_ - pos_ < want && base_ + len_ < end_) {
    crc_ = crc32c::Extend(crc_, buf_.data() + crc_from_, pos_ - crc_from_);
    std::memmove(buf_.data(), buf_.data() + pos_, len_ - pos_);
    base_ += pos_;
    len_ -= pos_;
    pos_ = crc_from_ = 0;
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf_.size() - len_, end_ - (base_ + len_)));
    SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(base_ + len_, n, buf_.data() + len_));
    if (got.size() != n) {
      return DataLoss(file_->path() + ": index file shrank while it was read");
    }
    if (got.data() != buf_.data() + len_) std::memcpy(buf_.data() + len_, got.data(), n);
    len_ += n;
  }
  return ByteView(buf_.data() + pos_, len_ - pos_);
}

}  // namespace sluice::format

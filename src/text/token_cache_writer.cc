// TokenCacheWriter: ids streamed into <prefix>.bin, the index written at Close
// (docs/text-format.md, "Token cache").
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "sluice/base/bytes.h"
#include "sluice/text/token_cache.h"

namespace sluice::text {

namespace {

template <TokenId T>
bool InVocabulary(T id, uint64_t vocab_size) {
  if constexpr (std::is_signed_v<T>) {
    if (id < 0) return false;
  }
  return static_cast<uint64_t>(id) < vocab_size;
}

// Appends ids (already checked to fit) as little-endian U values. The host is little-endian
// (the reader asserts it), so a U's bytes are already in file order.
template <typename U, TokenId T>
void AppendLittleEndian(std::span<const T> ids, std::string* out) {
  const size_t at = out->size();
  out->resize(at + ids.size() * sizeof(U));
  char* p = out->data() + at;
  for (size_t k = 0; k < ids.size(); ++k, p += sizeof(U)) {
    const U v = static_cast<U>(ids[k]);
    std::memcpy(p, &v, sizeof(U));
  }
}

}  // namespace

TokenWidth TokenWidthForVocab(uint64_t vocab_size) {
  return vocab_size <= 65536 ? TokenWidth::k16 : TokenWidth::k32;
}

std::string TokenCacheDataPath(std::string_view prefix) { return std::string(prefix) + ".bin"; }
std::string TokenCacheIndexPath(std::string_view prefix) { return std::string(prefix) + ".idx"; }

TokenCacheWriter::TokenCacheWriter(io::FileSystem* fs, std::string prefix, uint64_t vocab_size,
                                   TokenCacheWriterOptions options,
                                   std::unique_ptr<io::WritableFile> data)
    : fs_(fs),
      prefix_(std::move(prefix)),
      vocab_size_(vocab_size),
      width_(TokenWidthForVocab(vocab_size)),
      options_(options),
      data_(std::move(data)) {
  buffer_.reserve(options_.buffer_bytes + 64);
}

TokenCacheWriter::~TokenCacheWriter() {
  if (!closed_) data_->Abort();
}

Result<std::unique_ptr<TokenCacheWriter>> TokenCacheWriter::Create(
    io::FileSystem* fs, const std::string& prefix, uint64_t vocab_size,
    const TokenCacheWriterOptions& options) {
  if (vocab_size == 0 || vocab_size > (uint64_t{1} << 31)) {
    return InvalidArgument(
        fmt::format("token cache {}: vocab_size {} outside [1, 2^31]", prefix, vocab_size));
  }
  // An index left from an earlier cache must not describe the ids we are about to write.
  const std::string index_path = TokenCacheIndexPath(prefix);
  if (fs->Exists(index_path)) SLUICE_RETURN_IF_ERROR(fs->Delete(index_path));
  SLUICE_ASSIGN_OR_RETURN(auto data, fs->OpenForWrite(TokenCacheDataPath(prefix), options.write));
  return std::unique_ptr<TokenCacheWriter>(
      new TokenCacheWriter(fs, prefix, vocab_size, options, std::move(data)));
}

template <TokenId T>
Status TokenCacheWriter::Append(std::span<const T> ids) {
  if (!status_.ok()) return status_;
  if (closed_) return FailedPrecondition("append to closed token cache " + prefix_);
  if (ids.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return status_ = ResourceExhausted(fmt::format(
               "token cache {}: document {} has {} ids; the index stores lengths as int32", prefix_,
               lengths_.size(), ids.size()));
  }
  // Encoded in slices so the buffer stays near buffer_bytes whatever the document length.
  constexpr size_t kSlice = 4096;
  for (size_t begin = 0; begin < ids.size(); begin += kSlice) {
    const size_t end = std::min(ids.size(), begin + kSlice);
    for (size_t k = begin; k < end; ++k) {
      if (!InVocabulary(ids[k], vocab_size_)) {
        return status_ = InvalidArgument(fmt::format(
                   "token cache {}: document {} position {}: id {} outside the vocabulary "
                   "[0, {})",
                   prefix_, lengths_.size(), k, static_cast<int64_t>(ids[k]), vocab_size_));
      }
    }
    if (width_ == TokenWidth::k16) {
      AppendLittleEndian<uint16_t>(ids.subspan(begin, end - begin), &buffer_);
    } else {
      AppendLittleEndian<uint32_t>(ids.subspan(begin, end - begin), &buffer_);
    }
    if (buffer_.size() >= options_.buffer_bytes) SLUICE_RETURN_IF_ERROR(Flush());
  }
  lengths_.push_back(static_cast<int32_t>(ids.size()));
  tokens_ += ids.size();
  return Status::OK();
}

template Status TokenCacheWriter::Append(std::span<const int32_t>);
template Status TokenCacheWriter::Append(std::span<const int64_t>);
template Status TokenCacheWriter::Append(std::span<const uint16_t>);
template Status TokenCacheWriter::Append(std::span<const uint32_t>);

Status TokenCacheWriter::Flush() {
  if (buffer_.empty()) return Status::OK();
  status_ = data_->Append(buffer_);
  buffer_.clear();
  return status_;
}

Status TokenCacheWriter::WriteIndex() {
  SLUICE_ASSIGN_OR_RETURN(auto index,
                          fs_->OpenForWrite(TokenCacheIndexPath(prefix_), options_.write));
  std::string out(kTokenCacheMagic);
  PutFixed64(&out, kTokenCacheVersion);
  out.push_back(
      static_cast<char>(width_ == TokenWidth::k16 ? kTokenDtypeUint16 : kTokenDtypeInt32));
  PutFixed64(&out, lengths_.size());      // sequences: one per document
  PutFixed64(&out, lengths_.size() + 1);  // document boundaries 0..N
  // Sections are built in `out` and appended whenever it grows past the buffer size.
  auto spill = [&]() -> Status {
    if (out.size() < options_.buffer_bytes) return Status::OK();
    SLUICE_RETURN_IF_ERROR(index->Append(out));
    out.clear();
    return Status::OK();
  };
  for (int32_t len : lengths_) {
    PutFixed32(&out, static_cast<uint32_t>(len));
    SLUICE_RETURN_IF_ERROR(spill());
  }
  uint64_t offset = 0;
  for (int32_t len : lengths_) {
    PutFixed64(&out, offset);
    offset += static_cast<uint64_t>(len) * TokenWidthBytes(width_);
    SLUICE_RETURN_IF_ERROR(spill());
  }
  for (uint64_t d = 0; d <= lengths_.size(); ++d) {
    PutFixed64(&out, d);
    SLUICE_RETURN_IF_ERROR(spill());
  }
  SLUICE_RETURN_IF_ERROR(index->Append(out));
  return index->Close();
}

Status TokenCacheWriter::Close() {
  if (closed_) return status_;
  closed_ = true;
  if (status_.ok()) status_ = Flush();
  if (!status_.ok()) {
    data_->Abort();
    return status_;
  }
  status_ = data_->Close();
  if (status_.ok()) status_ = WriteIndex();
  // Without its index the .bin is not a cache; remove it rather than leave it half-made.
  if (!status_.ok()) (void)fs_->Delete(TokenCacheDataPath(prefix_));
  return status_;
}

}  // namespace sluice::text

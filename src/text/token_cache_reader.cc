// TokenCacheReader: maps <prefix>.idx and <prefix>.bin and validates the index once, so that
// per-document access is two loads and a pointer add (docs/text-format.md, "Token cache").
#include <fmt/format.h>

#include <cstring>

#include "sluice/base/bytes.h"
#include "sluice/text/token_cache.h"

namespace sluice::text {

namespace {

Status IndexError(const std::string& path, uint64_t offset, std::string_view what) {
  return DataLoss(fmt::format("{}: offset {}: {}", path, offset, what));
}

Result<std::unique_ptr<io::FileMapping>> MapFile(io::FileSystem* fs, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(path));
  return file->Map();
}

}  // namespace

TokenCacheReader::~TokenCacheReader() = default;

bool TokenCacheReader::is_mapped() const { return data_->is_mapped(); }

Result<std::unique_ptr<TokenCacheReader>> TokenCacheReader::Open(io::FileSystem* fs,
                                                                 const std::string& prefix) {
  std::unique_ptr<TokenCacheReader> r(new TokenCacheReader());
  r->index_path_ = TokenCacheIndexPath(prefix);
  r->data_path_ = TokenCacheDataPath(prefix);
  SLUICE_ASSIGN_OR_RETURN(r->index_, MapFile(fs, r->index_path_));
  SLUICE_ASSIGN_OR_RETURN(r->data_, MapFile(fs, r->data_path_));
  SLUICE_RETURN_IF_ERROR(r->ValidateIndex(r->data_->data().size()));
  r->ids_ = r->data_->data().data();
  return r;
}

// Checks, in file order, everything later accesses rely on; the first inconsistency is
// reported with the offset of the field that holds it.
Status TokenCacheReader::ValidateIndex(uint64_t data_bytes) {
  const ByteView idx = index_->data();
  const std::string& path = index_path_;
  if (idx.size() < kTokenCacheHeaderBytes) {
    return IndexError(path, 0,
                      fmt::format("{} bytes, too short for the {}-byte header", idx.size(),
                                  kTokenCacheHeaderBytes));
  }
  if (idx.substr(0, kTokenCacheMagic.size()) != kTokenCacheMagic) {
    return IndexError(path, 0, "bad magic (not a token cache index)");
  }
  if (uint64_t v = DecodeFixed64(idx.data() + 9); v != kTokenCacheVersion) {
    return IndexError(path, 9, fmt::format("unsupported version {}", v));
  }
  const uint8_t dtype = static_cast<uint8_t>(idx[17]);
  if (dtype == kTokenDtypeUint16) {
    width_ = TokenWidth::k16;
  } else if (dtype == kTokenDtypeInt32) {
    width_ = TokenWidth::k32;
  } else {
    return IndexError(path, 17,
                      fmt::format("unsupported dtype code {} (sluice reads uint16 "
                                  "= 8 and int32 = 4)",
                                  dtype));
  }
  count_ = DecodeFixed64(idx.data() + 18);
  boundaries_ = DecodeFixed64(idx.data() + 26);
  // Sizes are checked by division so that huge counts cannot overflow the arithmetic.
  const uint64_t body = idx.size() - kTokenCacheHeaderBytes;
  if (count_ > body / 12 || boundaries_ > (body - 12 * count_) / 8 ||
      body != 12 * count_ + 8 * boundaries_) {
    return IndexError(path, 18,
                      fmt::format("{} sequences and {} document boundaries do not "
                                  "fit the {}-byte file",
                                  count_, boundaries_, idx.size()));
  }
  lengths_ = idx.data() + kTokenCacheHeaderBytes;
  offsets_ = lengths_ + 4 * count_;
  const size_t width = TokenWidthBytes(width_);
  uint64_t expected = 0;
  for (uint64_t i = 0; i < count_; ++i) {
    const int32_t len = static_cast<int32_t>(DecodeFixed32(lengths_ + 4 * i));
    if (len < 0) {
      return IndexError(path, kTokenCacheHeaderBytes + 4 * i,
                        fmt::format("sequence {}: negative length {}", i, len));
    }
    if (uint64_t off = DecodeFixed64(offsets_ + 8 * i); off != expected) {
      return IndexError(path, static_cast<uint64_t>(offsets_ - idx.data()) + 8 * i,
                        fmt::format("sequence {}: byte offset {}, expected {} (the end of the "
                                    "sequence before it)",
                                    i, off, expected));
    }
    expected += static_cast<uint64_t>(len) * width;
  }
  if (expected != data_bytes) {
    return DataLoss(
        fmt::format("{}: offset {}: the index ({}) describes {} bytes of ids but "
                    "the file has {}",
                    data_path_, std::min(expected, data_bytes), path, expected, data_bytes));
  }
  total_tokens_ = expected / width;
  if (boundaries_ == 0) {
    return IndexError(path, 26, "no document boundaries (at least the leading 0 is required)");
  }
  const char* bounds = offsets_ + 8 * count_;
  uint64_t prev = 0;
  for (uint64_t d = 0; d < boundaries_; ++d) {
    const uint64_t b = DecodeFixed64(bounds + 8 * d);
    if ((d == 0 && b != 0) || b < prev || b > count_ || (d + 1 == boundaries_ && b != count_)) {
      return IndexError(path, static_cast<uint64_t>(bounds - idx.data()) + 8 * d,
                        fmt::format("document boundary {} is {}; boundaries must rise from 0 "
                                    "to the sequence count {}",
                                    d, b, count_));
    }
    prev = b;
  }
  return Status::OK();
}

void TokenCacheReader::CopyDocument(uint64_t i, std::vector<int32_t>* out) const {
  Visit(i, [out](auto ids) { out->assign(ids.begin(), ids.end()); });
}

Status TokenCacheReader::VerifyIds(uint64_t vocab_size) const {
  const ByteView bin = data_->data();
  const size_t width = TokenWidthBytes(width_);
  for (uint64_t pos = 0; pos < total_tokens_; ++pos) {
    const char* p = bin.data() + pos * width;
    const uint64_t id = width == 2 ? uint64_t{static_cast<uint8_t>(p[0])} |
                                         uint64_t{static_cast<uint8_t>(p[1])} << 8
                                   : DecodeFixed32(p);
    if (id >= vocab_size) {
      return DataLoss(fmt::format("{}: offset {}: id {} outside the vocabulary [0, {})", data_path_,
                                  pos * width, id, vocab_size));
    }
  }
  return Status::OK();
}

}  // namespace sluice::text

// The token cache: pre-tokenized documents for pretraining, in the layout of Megatron-LM's
// memory-mapped indexed datasets, so Megatron/NeMo/GPT-NeoX read sluice's caches and sluice
// reads theirs. Two files per cache:
//   <prefix>.bin  every document's ids back to back, little-endian uint16 (vocabulary
//                 <= 65536) or 32-bit (larger vocabularies), no header;
//   <prefix>.idx  header, per-document lengths and byte offsets, document boundaries.
// The byte-by-byte layout is in docs/text-format.md, "Token cache"; this header only names
// its constants. The reader maps both files and hands out zero-copy spans.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"
#include "sluice/text/token_ids.h"

namespace sluice::text {

// .idx header (docs/text-format.md): magic, u64 version, u8 dtype code, u64 sequence count,
// u64 document-boundary count.
inline constexpr std::string_view kTokenCacheMagic{"MMIDIDX\0\0", 9};
inline constexpr uint64_t kTokenCacheVersion = 1;
inline constexpr size_t kTokenCacheHeaderBytes = 34;
// Megatron's dtype codes for the two widths sluice writes. 32-bit ids are tagged int32 (4):
// ids are below 2^31, so reading them as int32 or uint32 gives the same values.
inline constexpr uint8_t kTokenDtypeUint16 = 8;
inline constexpr uint8_t kTokenDtypeInt32 = 4;

enum class TokenWidth {
  k16 = 2,  // uint16 ids: vocabularies of at most 65536
  k32 = 4,  // 32-bit ids
};
TokenWidth TokenWidthForVocab(uint64_t vocab_size);
inline size_t TokenWidthBytes(TokenWidth w) { return static_cast<size_t>(w); }

std::string TokenCacheDataPath(std::string_view prefix);   // prefix + ".bin"
std::string TokenCacheIndexPath(std::string_view prefix);  // prefix + ".idx"

struct TokenCacheWriterOptions {
  io::WriteOptions write;                 // Default: durable at Close (synced)
  size_t buffer_bytes = size_t{1} << 20;  // Default: 1 MiB of ids per WritableFile::Append
};

// Writes a token cache. Both files appear only when Close() succeeds; the .idx is renamed
// into place last, so its presence marks a complete cache. Create() deletes an existing
// .idx under the prefix first, so a crash can never pair an old index with new ids.
// Sticky failure: after an error every call returns it. Close() is required; destroying an
// unclosed writer aborts it and leaves nothing under the final names.
// Threading: not thread-safe.
// Memory: 4 bytes per document (the lengths, written into the index at Close).
class TokenCacheWriter {
 public:
  // `vocab_size` picks the width and bounds the ids: every id must be in [0, vocab_size).
  static Result<std::unique_ptr<TokenCacheWriter>> Create(
      io::FileSystem* fs, const std::string& prefix, uint64_t vocab_size,
      const TokenCacheWriterOptions& options = {});
  ~TokenCacheWriter();

  // Appends one document. An id outside the vocabulary is InvalidArgument naming the
  // document and position; a document of 2^31 ids or more is ResourceExhausted (the index
  // stores lengths as int32).
  template <TokenId T>
  Status Append(std::span<const T> ids);
  Status Append(const std::vector<int32_t>& ids) { return Append(std::span<const int32_t>(ids)); }
  Status Close();

  uint64_t documents() const { return lengths_.size(); }
  uint64_t tokens() const { return tokens_; }
  TokenWidth width() const { return width_; }

 private:
  TokenCacheWriter(io::FileSystem* fs, std::string prefix, uint64_t vocab_size,
                   TokenCacheWriterOptions options, std::unique_ptr<io::WritableFile> data);
  Status Flush();
  Status WriteIndex();

  io::FileSystem* fs_;
  std::string prefix_;
  uint64_t vocab_size_;
  TokenWidth width_;
  TokenCacheWriterOptions options_;
  std::unique_ptr<io::WritableFile> data_;
  std::string buffer_;            // encoded ids not yet appended to data_
  std::vector<int32_t> lengths_;  // per document
  uint64_t tokens_ = 0;
  bool closed_ = false;
  Status status_;  // sticky: the first error wins
};

// Reads a token cache through FileSystem mappings (mmap for local files). Open() validates
// the whole index (header, counts against file sizes, every offset against the lengths,
// document boundaries), so every span handed out afterwards lies inside the .bin file.
// Errors are DataLoss naming the file and byte offset of the first inconsistency.
// Threading: every method may be called from many threads at once.
class TokenCacheReader {
  // Ids and index fields are used in place, as the little-endian bytes of the files.
  static_assert(std::endian::native == std::endian::little, "token cache needs an LE host");

 public:
  static Result<std::unique_ptr<TokenCacheReader>> Open(io::FileSystem* fs,
                                                        const std::string& prefix);
  ~TokenCacheReader();

  // Documents: Megatron calls them sequences; sluice writes one per document.
  uint64_t size() const { return count_; }
  uint64_t total_tokens() const { return total_tokens_; }
  TokenWidth width() const { return width_; }
  bool is_mapped() const;

  // Length of document i. Precondition (for all per-document calls): i < size().
  // Inline: these are the per-sample hot path of a pipeline reading the cache.
  uint64_t length(uint64_t i) const { return Load<uint32_t>(lengths_ + 4 * i); }
  // Zero-copy views into the mapped .bin. Precondition: width() is the matching width.
  std::span<const uint16_t> Document16(uint64_t i) const {
    return {reinterpret_cast<const uint16_t*>(ids_ + Offset(i)), length(i)};
  }
  std::span<const uint32_t> Document32(uint64_t i) const {
    return {reinterpret_cast<const uint32_t*>(ids_ + Offset(i)), length(i)};
  }
  // Calls fn with document i's span in its stored type; returns what fn returns.
  template <typename Fn>
  decltype(auto) Visit(uint64_t i, Fn&& fn) const {
    if (width_ == TokenWidth::k16) return fn(Document16(i));
    return fn(Document32(i));
  }
  // Document i widened to int32 into *out (replacing its content, keeping capacity).
  void CopyDocument(uint64_t i, std::vector<int32_t>* out) const;

  // O(tokens) scan: every id is below `vocab_size`. DataLoss naming the .bin offset of the
  // first id that is not. Open() does not do this (ids are not checksummed in this format).
  Status VerifyIds(uint64_t vocab_size) const;

 private:
  TokenCacheReader() = default;
  Status ValidateIndex(uint64_t data_bytes);
  // Index fields are unaligned in general (lengths start at byte 34); memcpy is one load.
  // The host is little-endian (asserted above), like the file.
  template <typename U>
  static U Load(const char* p) {
    U v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  uint64_t Offset(uint64_t i) const { return Load<uint64_t>(offsets_ + 8 * i); }

  std::string index_path_, data_path_;
  std::unique_ptr<io::FileMapping> index_, data_;
  TokenWidth width_ = TokenWidth::k16;
  uint64_t count_ = 0, boundaries_ = 0, total_tokens_ = 0;
  const char* lengths_ = nullptr;  // int32[count_] inside index_, possibly unaligned
  const char* offsets_ = nullptr;  // int64[count_] inside index_, possibly unaligned
  const char* ids_ = nullptr;      // the .bin bytes (data_), aligned for 32-bit ids
};

}  // namespace sluice::text

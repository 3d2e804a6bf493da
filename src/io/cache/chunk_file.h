// The format of one cached chunk file (docs/cache.md, "Chunk files"): a header naming the
// chunk's key and length with a CRC32C per 64 KiB page of the payload, then the payload.
// Pure functions over bytes; the store does the I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::io::cache {

inline constexpr char kChunkMagic[8] = {'S', 'L', 'C', 'H', 'U', 'N', 'K', '1'};
inline constexpr uint32_t kChunkFormatVersion = 1;
inline constexpr uint64_t kChunkPageBytes = 64 << 10;
inline constexpr size_t kChunkFixedHeaderBytes = 32;  // magic .. page count
inline constexpr uint32_t kMaxChunkKeyBytes = 4096;

struct ChunkHeader {
  std::string key;
  uint64_t length = 0;              // payload bytes
  std::vector<uint32_t> page_crcs;  // masked CRC32C of each page of the payload
  uint64_t header_bytes = 0;        // where the payload starts
};

// Pages of a payload of `length` bytes.
inline uint64_t ChunkPages(uint64_t length) {
  return (length + kChunkPageBytes - 1) / kChunkPageBytes;
}
// Header bytes of a chunk with this key and payload length.
inline uint64_t ChunkHeaderBytes(size_t key_bytes, uint64_t length) {
  return kChunkFixedHeaderBytes + key_bytes + 4 * ChunkPages(length) + 4;
}

// The header of a chunk holding `payload` under `key` (the payload follows it in the file).
std::string EncodeChunkHeader(std::string_view key, ByteView payload);

// Parses and checks a header read from the start of a chunk file: magic, version, page size,
// header CRC, and that it holds `expected_key` with `expected_length` bytes (a different key
// is a hash collision or a stale file: the caller treats it as damaged). `path` names the file
// in errors. DataLoss on any mismatch.
Result<ChunkHeader> DecodeChunkHeader(ByteView bytes, std::string_view expected_key,
                                      uint64_t expected_length, std::string_view path);

// Parses the header without knowing the key (listing tools): checks everything but the key.
Result<ChunkHeader> DecodeAnyChunkHeader(ByteView bytes, std::string_view path);

// Checks pages [first_page, first_page + n) whose bytes are `pages` (the last page may be
// short). DataLoss naming the file and page offset on a mismatch.
Status VerifyChunkPages(const ChunkHeader& header, uint64_t first_page, ByteView pages,
                        std::string_view path);

}  // namespace sluice::io::cache

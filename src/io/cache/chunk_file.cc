// Chunk file headers: layout in docs/cache.md, "Chunk files". All integers little-endian.
//   0  magic "SLCHUNK1"        8 bytes
//   8  format version          u32 (1)
//  12  page size               u32 (65536)
//  16  payload length          u64
//  24  key length K            u32
//  28  page count P            u32
//  32  key                     K bytes
//      page CRCs               P x u32, masked CRC32C of each page
//      header CRC              u32, masked CRC32C of every header byte before it
#include "chunk_file.h"

#include <cstring>

#include "sluice/base/crc32c.h"

namespace sluice::io::cache {
namespace {

Status Damaged(std::string_view path, uint64_t offset, std::string_view what) {
  return DataLoss(std::string(path) + ":" + std::to_string(offset) +
                  ": damaged cache file: " + std::string(what));
}

uint32_t PageCrc(ByteView page) { return crc32c::Mask(crc32c::Value(page.data(), page.size())); }

}  // namespace

std::string EncodeChunkHeader(std::string_view key, ByteView payload) {
  const uint64_t pages = ChunkPages(payload.size());
  std::string h(ChunkHeaderBytes(key.size(), payload.size()), '\0');
  std::memcpy(h.data(), kChunkMagic, sizeof kChunkMagic);
  EncodeFixed32(h.data() + 8, kChunkFormatVersion);
  EncodeFixed32(h.data() + 12, static_cast<uint32_t>(kChunkPageBytes));
  EncodeFixed64(h.data() + 16, payload.size());
  EncodeFixed32(h.data() + 24, static_cast<uint32_t>(key.size()));
  EncodeFixed32(h.data() + 28, static_cast<uint32_t>(pages));
  std::memcpy(h.data() + kChunkFixedHeaderBytes, key.data(), key.size());
  char* crcs = h.data() + kChunkFixedHeaderBytes + key.size();
  for (uint64_t p = 0; p < pages; ++p) {
    EncodeFixed32(crcs + 4 * p, PageCrc(payload.substr(p * kChunkPageBytes, kChunkPageBytes)));
  }
  EncodeFixed32(h.data() + h.size() - 4, crc32c::Mask(crc32c::Value(h.data(), h.size() - 4)));
  return h;
}

Result<ChunkHeader> DecodeAnyChunkHeader(ByteView bytes, std::string_view path) {
  if (bytes.size() < kChunkFixedHeaderBytes) return Damaged(path, 0, "shorter than its header");
  if (std::memcmp(bytes.data(), kChunkMagic, sizeof kChunkMagic) != 0) {
    return Damaged(path, 0, "bad magic");
  }
  if (DecodeFixed32(bytes.data() + 8) != kChunkFormatVersion) {
    return Damaged(path, 8, "unknown format version");
  }
  if (DecodeFixed32(bytes.data() + 12) != kChunkPageBytes) return Damaged(path, 12, "page size");
  ChunkHeader h;
  h.length = DecodeFixed64(bytes.data() + 16);
  const uint32_t key_bytes = DecodeFixed32(bytes.data() + 24);
  const uint32_t pages = DecodeFixed32(bytes.data() + 28);
  if (key_bytes > kMaxChunkKeyBytes) return Damaged(path, 24, "key length");
  if (pages != ChunkPages(h.length)) return Damaged(path, 28, "page count");
  h.header_bytes = ChunkHeaderBytes(key_bytes, h.length);
  if (bytes.size() < h.header_bytes) return Damaged(path, 0, "shorter than its header");
  const uint32_t stored = DecodeFixed32(bytes.data() + h.header_bytes - 4);
  if (crc32c::Unmask(stored) != crc32c::Value(bytes.data(), h.header_bytes - 4)) {
    return Damaged(path, h.header_bytes - 4, "header CRC mismatch");
  }
  h.key.assign(bytes.data() + kChunkFixedHeaderBytes, key_bytes);
  const char* crcs = bytes.data() + kChunkFixedHeaderBytes + key_bytes;
  h.page_crcs.resize(pages);
  for (uint32_t p = 0; p < pages; ++p) h.page_crcs[p] = DecodeFixed32(crcs + 4 * p);
  return h;
}

Result<ChunkHeader> DecodeChunkHeader(ByteView bytes, std::string_view expected_key,
                                      uint64_t expected_length, std::string_view path) {
  SLUICE_ASSIGN_OR_RETURN(ChunkHeader h, DecodeAnyChunkHeader(bytes, path));
  if (h.key != expected_key) return Damaged(path, kChunkFixedHeaderBytes, "holds another key");
  if (h.length != expected_length) {
    return Damaged(
        path, 16,
        "length " + std::to_string(h.length) + ", expected " + std::to_string(expected_length));
  }
  return h;
}

Status VerifyChunkPages(const ChunkHeader& header, uint64_t first_page, ByteView pages,
                        std::string_view path) {
  for (uint64_t i = 0; i * kChunkPageBytes < pages.size(); ++i) {
    const uint64_t p = first_page + i;
    if (p >= header.page_crcs.size()) {
      return Damaged(path, header.header_bytes + p * kChunkPageBytes, "page past the end");
    }
    if (PageCrc(pages.substr(i * kChunkPageBytes, kChunkPageBytes)) != header.page_crcs[p]) {
      return Damaged(path, header.header_bytes + p * kChunkPageBytes, "page CRC mismatch");
    }
  }
  return Status::OK();
}

}  // namespace sluice::io::cache

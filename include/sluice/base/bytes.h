// Byte helpers: little-endian fixed-width encoding used by TFRecord framing and index files.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sluice {

// A non-owning view of bytes. Like LevelDB's Slice; the owner must outlive it.
using ByteView = std::string_view;

// On little-endian hosts these compile to single loads and stores (the record reader decodes
// a header per record); the byte loops are the portable definition.
inline void EncodeFixed32(char* dst, uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(dst, &v, 4);
  } else {
    for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>(v >> (8 * i));
  }
}
inline void EncodeFixed64(char* dst, uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(dst, &v, 8);
  } else {
    for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(v >> (8 * i));
  }
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, 4);
  } else {
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  }
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, 8);
  } else {
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  }
  return v;
}
inline void PutFixed32(std::string* dst, uint32_t v) {
  char b[4];
  EncodeFixed32(b, v);
  dst->append(b, 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  char b[8];
  EncodeFixed64(b, v);
  dst->append(b, 8);
}

// "1.5 MiB", "100 MB" -> bytes. Accepts B, KB/MB/GB (1000^n) and KiB/MiB/GiB (1024^n).
bool ParseByteSize(std::string_view text, uint64_t* bytes);
// 1536 -> "1.5 KiB"
std::string FormatByteSize(uint64_t bytes);

}  // namespace sluice

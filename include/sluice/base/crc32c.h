// CRC32C (Castagnoli), the checksum of TFRecord framing, computed with ISA-L's
// hardware-accelerated crc32_iscsi (SSE4.2 crc32 + PCLMUL folding), never a byte table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::crc32c {

// CRC32C of data[0, n) continuing from `crc` (the CRC of the bytes before it; 0 to start).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// CRC32C of A||B from crc(A), crc(B) and |B|, in O(log |B|) (zlib's crc32_combine, for the
// Castagnoli polynomial). Lets a reader check the CRC of any range from prefix CRCs.
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// Why masking: computing the CRC of a string that itself contains embedded CRCs is
// weak (a CRC of data followed by its own CRC is a constant). TFRecord, like LevelDB's
// log, therefore stores a rotated-and-offset "masked" CRC. The constant is TensorFlow's.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace sluice::crc32c

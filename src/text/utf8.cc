// UTF-8 validation (RFC 3629), the same acceptance rule as SentencePiece's DecodeUTF8.
#include "sluice/text/utf8.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace sluice::text {
namespace {

bool IsTrail(uint8_t b) { return (b & 0xC0) == 0x80; }

// Length of the well-formed sequence starting at p[0] (p[0] >= 0x80), or 0 when p[0] does
// not start one. `left` is the number of bytes available from p on.
size_t SequenceLength(const uint8_t* p, size_t left) {
  const uint8_t b0 = p[0];
  if (b0 >= 0xC2 && b0 <= 0xDF) return left >= 2 && IsTrail(p[1]) ? 2 : 0;  // C0, C1: overlong
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (left < 3 || !IsTrail(p[1]) || !IsTrail(p[2])) return 0;
    if (b0 == 0xE0 && p[1] < 0xA0) return 0;   // overlong (< U+0800)
    if (b0 == 0xED && p[1] >= 0xA0) return 0;  // surrogates U+D800..U+DFFF
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (left < 4 || !IsTrail(p[1]) || !IsTrail(p[2]) || !IsTrail(p[3])) return 0;
    if (b0 == 0xF0 && p[1] < 0x90) return 0;   // overlong (< U+10000)
    if (b0 == 0xF4 && p[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // a stray trail byte, C0/C1, or F5..FF
}

}  // namespace

std::optional<size_t> FindInvalidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // Skip ASCII 8 bytes at a time: the common case for source text and markup.
    while (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, p + i, 8);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = SequenceLength(p + i, n - i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

Status InvalidUtf8Error(std::string_view file, uint64_t line_offset, uint64_t line_number,
                        std::string_view line, size_t bad_byte) {
  const unsigned byte = bad_byte < line.size() ? static_cast<uint8_t>(line[bad_byte]) : 0;
  return DataLoss(fmt::format("{}: offset {}: line {}: invalid UTF-8 (byte 0x{:02x} at column {})",
                              file, line_offset + bad_byte, line_number, byte, bad_byte + 1));
}

}  // namespace sluice::text

// UTF-8 validation (include/sluice/base/utf8.h).
#include "sluice/base/utf8.h"

#include <cstdint>
#include <cstring>

namespace sluice {
namespace {

bool IsTrail(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + i;
  const size_t left = s.size() - i;
  const uint8_t b0 = p[0];
  if (b0 < 0x80) return 1;
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
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

std::string EscapeBytes(std::string_view bytes, size_t max_bytes) {
  const bool cut = bytes.size() > max_bytes;
  if (cut) bytes = bytes.substr(0, max_bytes);
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const size_t n = c >= 0x80 ? Utf8SequenceLength(bytes, i) : (c >= 0x20 && c < 0x7f);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
    ++i;
  }
  if (cut) out += "...";
  return out;
}

}  // namespace sluice

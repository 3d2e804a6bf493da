// UTF-8 validation for the JSON form of Examples (feature names are bytes on the wire).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::format {

// Length of the valid UTF-8 sequence at s[i], or 0 when there is none (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF).
inline size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b0 = byte(i);
  size_t n = b0 < 0x80           ? 1
             : (b0 >> 5) == 0x6  ? 2
             : (b0 >> 4) == 0xe  ? 3
             : (b0 >> 3) == 0x1e ? 4
                                 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  if (n == 2 && b0 < 0xc2) return 0;                                           // overlong
  if (n == 3 && b0 == 0xe0 && byte(i + 1) < 0xa0) return 0;                    // overlong
  if (n == 3 && b0 == 0xed && byte(i + 1) >= 0xa0) return 0;                   // surrogate
  if (n == 4 && b0 == 0xf0 && byte(i + 1) < 0x90) return 0;                    // overlong
  if (n == 4 && (b0 > 0xf4 || (b0 == 0xf4 && byte(i + 1) >= 0x90))) return 0;  // > U+10FFFF
  return n;
}

inline bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace sluice::format

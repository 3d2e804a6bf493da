#include "format/base64.h"

#include <array>
#include <cstdint>

namespace sluice::format {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr std::array<int8_t, 256> kDecode = MakeDecodeTable();

}  // namespace

void AppendBase64(std::string* out, std::string_view bytes) {
  out->reserve(out->size() + (bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out->push_back(kAlphabet[(v >> shift) & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest == 0) return;
  uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
  out->push_back(kAlphabet[(v >> 18) & 63]);
  out->push_back(kAlphabet[(v >> 12) & 63]);
  out->push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
  out->push_back('=');
}

bool DecodeBase64(std::string_view text, std::string* out) {
  if (text.size() % 4 != 0) return false;
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  out->reserve(out->size() + text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    size_t real = last ? 4 - padding : 4;  // characters carrying data in this quantum
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int8_t d = k < real ? kDecode[static_cast<uint8_t>(text[i + k])] : 0;
      if (d < 0) return false;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    // The unused low bits of a padded quantum must be zero, so each text decodes uniquely.
    if ((real == 2 && (v & 0xffff) != 0) || (real == 3 && (v & 0xff) != 0)) return false;
    out->push_back(static_cast<char>(v >> 16));
    if (real > 2) out->push_back(static_cast<char>(v >> 8));
    if (real > 3) out->push_back(static_cast<char>(v));
  }
  return true;
}

}  // namespace sluice::format

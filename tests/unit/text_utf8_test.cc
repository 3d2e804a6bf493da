#include <gtest/gtest.h>

#include <string>

#include "sluice/base/utf8.h"
#include "sluice/text/utf8.h"

namespace sluice::text {
namespace {

// Data quoted in a message: valid UTF-8 kept, every other byte as \xNN, the cap marked.
TEST(Utf8, EscapeBytesMakesAnyBytesValidMessageText) {
  EXPECT_EQ(EscapeBytes("plain 'text' \xc3\xa9"), "plain 'text' \xc3\xa9");
  EXPECT_EQ(EscapeBytes(std::string("a\xff\x00\n\xc3", 5)), "a\\xff\\x00\\x0a\\xc3");
  EXPECT_EQ(EscapeBytes("abcdef", 3), "abc...");
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_TRUE(IsValidUtf8(EscapeBytes(all)));
}

TEST(Utf8, WellFormedTextIsValid) {
  EXPECT_EQ(FindInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("plain ascii, long enough for the word-at-a-time path"), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8(std::string("nul\0inside", 10)), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("\xc2\x80 \xdf\xbf \xe0\xa0\x80 \xef\xbf\xbd \xf0\x90\x80\x80 "
                            "\xf4\x8f\xbf\xbf"),  // boundaries of each length
            std::nullopt);
}

// Each malformation class, placed after an ASCII prefix long enough to use the fast path.
TEST(Utf8, EachMalformationIsFoundAtItsOffset) {
  const std::string prefix = "0123456789abcdefXYZ";  // 19 bytes
  const std::vector<std::pair<std::string, const char*>> cases = {
      {"\x80", "stray trail byte"},
      {"\xc0\xaf", "overlong 2-byte (C0)"},
      {"\xc1\xbf", "overlong 2-byte (C1)"},
      {"\xe0\x9f\xbf", "overlong 3-byte"},
      {"\xed\xa0\x80", "surrogate U+D800"},
      {"\xf0\x8f\xbf\xbf", "overlong 4-byte"},
      {"\xf4\x90\x80\x80", "above U+10FFFF"},
      {"\xf5\x80\x80\x80", "lead byte F5"},
      {"\xff", "byte FF"},
      {"\xc3"
       "A",
       "lead byte followed by ASCII"},
      {"\xe2\x82", "sequence truncated by the end of text"},
  };
  for (const auto& [bad, what] : cases) {
    EXPECT_EQ(FindInvalidUtf8(prefix + bad), prefix.size()) << what;
    EXPECT_EQ(FindInvalidUtf8(bad + prefix), 0u) << what;
  }
}

TEST(Utf8, FirstOfSeveralErrorsIsReported) {
  EXPECT_EQ(FindInvalidUtf8("caf\xc3\xa9 \xff and \xfe"), 6u);
}

// SentencePiece's DecodeUTF8 formulation (decode the code point, then check its range),
// against which the byte-range formulation in base is checked exhaustively up to 3 bytes.
size_t ReferenceLength(const std::string& s) {
  auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  auto trail = [&](size_t k) { return k < s.size() && (b(k) & 0xC0) == 0x80; };
  auto valid = [](uint32_t cp) { return cp < 0xD800 || (cp >= 0xE000 && cp <= 0x10FFFF); };
  if (b(0) < 0x80) return 1;
  if ((b(0) & 0xE0) == 0xC0 && trail(1)) {
    uint32_t cp = (b(0) & 0x1Fu) << 6 | (b(1) & 0x3Fu);
    if (cp >= 0x80) return 2;
  } else if ((b(0) & 0xF0) == 0xE0 && trail(1) && trail(2)) {
    uint32_t cp = (b(0) & 0x0Fu) << 12 | (b(1) & 0x3Fu) << 6 | (b(2) & 0x3Fu);
    if (cp >= 0x800 && valid(cp)) return 3;
  } else if ((b(0) & 0xF8) == 0xF0 && trail(1) && trail(2) && trail(3)) {
    uint32_t cp =
        (b(0) & 0x07u) << 18 | (b(1) & 0x3Fu) << 12 | (b(2) & 0x3Fu) << 6 | (b(3) & 0x3Fu);
    if (cp >= 0x10000 && valid(cp)) return 4;
  }
  return 0;
}

TEST(Utf8, AgreesWithCodePointDecoderOnEveryShortSequence) {
  std::string s;
  size_t mismatches = 0;
  for (uint32_t b0 = 0; b0 < 256; ++b0) {
    for (uint32_t b1 = 0; b1 < 256; ++b1) {
      for (uint32_t b2 = 0; b2 < 256; b2 += (b0 >= 0xE0 ? 1 : 255)) {
        for (uint32_t b3 : {0x41u, 0x80u, 0xBFu}) {  // 4-byte tails: ASCII, min/max trail
          s = {static_cast<char>(b0), static_cast<char>(b1), static_cast<char>(b2),
               static_cast<char>(b3)};
          mismatches += Utf8SequenceLength(s, 0) != ReferenceLength(s);
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(Utf8, ErrorNamesFileOffsetLineAndByte) {
  const std::string line =
      "ab\xff"
      "cd";
  auto bad = FindInvalidUtf8(line);
  ASSERT_EQ(bad, 2u);
  Status st = InvalidUtf8Error("corpus.txt", 1000, 17, line, *bad);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_EQ(st.message(),
            "corpus.txt: offset 1002: line 17: invalid UTF-8 (byte 0xff at column 3)");
}

}  // namespace
}  // namespace sluice::text

#include <gtest/gtest.h>

#include <string>

#include "sluice/text/utf8.h"

namespace sluice::text {
namespace {

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

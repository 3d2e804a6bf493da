#include <gtest/gtest.h>

#include "sluice/text/plain_text.h"

namespace sluice::text {
namespace {

std::vector<std::string_view> Texts(const std::vector<TextDocument>& docs) {
  std::vector<std::string_view> out;
  for (const auto& d : docs) out.push_back(d.text);
  return out;
}

TEST(PlainText, LinesKeepEmptyOnesAndDropFinalNewline) {
  const std::string_view data = "a\n\nb c\r\n\n";
  const auto docs = SplitText(data, TextUnit::kLine);
  EXPECT_EQ(Texts(docs), (std::vector<std::string_view>{"a", "", "b c\r", ""}));
  EXPECT_EQ(docs[2].offset, 3u);
  EXPECT_EQ(docs[2].line, 3u);
  EXPECT_EQ(Texts(SplitText("no newline", TextUnit::kLine)),
            (std::vector<std::string_view>{"no newline"}));
  EXPECT_TRUE(SplitText("", TextUnit::kLine).empty());
  EXPECT_EQ(SplitText("\n", TextUnit::kLine).size(), 1u);
}

TEST(PlainText, ParagraphsAreRunsOfNonBlankLines) {
  const std::string_view data = "\n  \nfirst line\nsecond\n\t\r\n\nthird\n";
  const auto docs = SplitText(data, TextUnit::kParagraph);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].text, "first line\nsecond");
  EXPECT_EQ(docs[0].offset, 4u);
  EXPECT_EQ(docs[0].line, 3u);
  EXPECT_EQ(docs[1].text, "third");
  EXPECT_EQ(docs[1].line, 7u);
  EXPECT_TRUE(SplitText("\n\n \n", TextUnit::kParagraph).empty());
}

}  // namespace
}  // namespace sluice::text

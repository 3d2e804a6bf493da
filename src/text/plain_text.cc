// Plain text to documents (docs/text.md, "Plain text").
#include "sluice/text/plain_text.h"

namespace sluice::text {
namespace {

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

std::vector<TextDocument> SplitText(std::string_view data, TextUnit unit) {
  std::vector<TextDocument> docs;
  bool in_paragraph = false;
  uint64_t line_number = 0;
  for (size_t start = 0; start < data.size();) {
    size_t nl = data.find('\n', start);
    if (nl == std::string_view::npos) nl = data.size();
    const std::string_view line = data.substr(start, nl - start);
    ++line_number;
    if (unit == TextUnit::kLine) {
      docs.push_back({line, start, line_number});
    } else if (IsBlank(line)) {
      in_paragraph = false;
    } else if (in_paragraph) {  // extend the paragraph over this line
      TextDocument& p = docs.back();
      p.text = data.substr(p.offset, nl - p.offset);
    } else {
      docs.push_back({line, start, line_number});
      in_paragraph = true;
    }
    start = nl + 1;
  }
  return docs;
}

}  // namespace sluice::text

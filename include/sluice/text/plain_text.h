// Splitting plain text into documents: one per line, or one per paragraph (a run of
// non-blank lines). Views into the caller's buffer, each with the file offset and line
// number that error messages need (docs/text.md, "Plain text").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace sluice::text {

enum class TextUnit {
  kLine,       // every '\n'-terminated line, empty ones included; a final '\n' ends the
               // last line rather than starting an empty one (as getline and spm_encode read)
  kParagraph,  // runs of non-blank lines (blank: only spaces, tabs and '\r'), joined by their
               // '\n's; blank lines only separate
};

struct TextDocument {
  std::string_view text;  // without the terminating '\n'
  uint64_t offset = 0;    // byte offset of text[0] in the data
  uint64_t line = 0;      // 1-based number of its first line
};

std::vector<TextDocument> SplitText(std::string_view data, TextUnit unit);

}  // namespace sluice::text

// UTF-8 validation (RFC 3629: no overlong forms, no surrogates U+D800..U+DFFF, nothing above
// U+10FFFF, no truncated sequences). The same acceptance rule as SentencePiece's decoder and
// Python's strict "utf-8" codec. Used by the Example JSON form (format) and by the text path's
// on_error policy for invalid UTF-8 (text).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

// Length (1-4) of the well-formed UTF-8 sequence starting at s[i], or 0 when s[i] does not
// start one. Precondition: i < s.size().
size_t Utf8SequenceLength(std::string_view s, size_t i);

// Offset of the first byte of `text` that does not start a well-formed sequence, or nullopt
// when the whole text is valid. ASCII runs are checked 8 bytes at a time.
std::optional<size_t> FindInvalidUtf8(std::string_view text);

inline bool IsValidUtf8(std::string_view text) { return !FindInvalidUtf8(text).has_value(); }

// `bytes` made fit to quote in a message: printable ASCII and well-formed UTF-8 stay as they
// are, every other byte (control characters, invalid UTF-8) becomes \xNN; past `max_bytes`
// of input the rest is cut and "..." appended. Messages that quote data (a damaged line, a
// parser's "last read: ...") go through it, so that a message is valid UTF-8 text whatever
// the data held: Python refuses to make a str of anything else.
std::string EscapeBytes(std::string_view bytes, size_t max_bytes = std::string_view::npos);

}  // namespace sluice

// UTF-8 validation, separate from tokenization so that the caller's on_error policy can act
// on a bad line with its number and byte offset (docs/text.md, "Invalid UTF-8").
//
// SentencePiece itself never fails on invalid UTF-8: its normalizer turns every byte that
// does not start a well-formed sequence into U+FFFD, which encodes as <unk> (or as byte
// pieces in byte-fallback models). sluice's tokenizer does the same, so its ids always equal
// SentencePiece's. A caller whose policy is `raise` (the default) or `skip` checks the text
// with FindInvalidUtf8 first.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sluice/base/status.h"
#include "sluice/base/utf8.h"

namespace sluice::text {

// Offset of the first byte of `text` that is not part of a well-formed UTF-8 sequence, or
// nullopt when the whole text is valid: the same rule SentencePiece uses to decide which bytes
// become U+FFFD (sluice/base/utf8.h).
using ::sluice::FindInvalidUtf8;

// The DataLoss error for a line that is not valid UTF-8, naming the file offset of the bad
// byte: "corpus.txt: offset 1234: line 17: invalid UTF-8 (byte 0xff at column 5)".
// `line_offset` is the file offset of the line's first byte, `line_number` counts from 1,
// `bad_byte` is what FindInvalidUtf8 returned for `line`.
Status InvalidUtf8Error(std::string_view file, uint64_t line_offset, uint64_t line_number,
                        std::string_view line, size_t bad_byte);

}  // namespace sluice::text

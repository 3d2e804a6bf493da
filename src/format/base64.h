// Standard base64 (RFC 4648 section 4, with '=' padding), for bytes in the JSON form of
// Examples. Small enough that a dependency would cost more than it saves.
#pragma once

#include <string>
#include <string_view>

namespace sluice::format {

void AppendBase64(std::string* out, std::string_view bytes);
// False when `text` is not canonical padded base64 (wrong length, foreign characters,
// misplaced padding, or nonzero bits in the last character's unused tail).
bool DecodeBase64(std::string_view text, std::string* out);

}  // namespace sluice::format

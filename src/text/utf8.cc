// The text path's invalid-UTF-8 error (the check itself is sluice/base/utf8.h).
#include "sluice/text/utf8.h"

#include <fmt/format.h>

namespace sluice::text {

Status InvalidUtf8Error(std::string_view file, uint64_t line_offset, uint64_t line_number,
                        std::string_view line, size_t bad_byte) {
  const unsigned byte = bad_byte < line.size() ? static_cast<uint8_t>(line[bad_byte]) : 0;
  return DataLoss(fmt::format("{}: offset {}: line {}: invalid UTF-8 (byte 0x{:02x} at column {})",
                              file, line_offset + bad_byte, line_number, byte, bad_byte + 1));
}

}  // namespace sluice::text

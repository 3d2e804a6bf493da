// The pieces of HTTP responses sluice parses itself (libcurl does the framing): header lines
// and Content-Range values. Pure, fuzzed in tests/fuzz/http_response_fuzz.cc.
#pragma once

#include <cstdint>
#include <string_view>

#include "sluice/io/http_engine.h"

namespace sluice::io {

// Applies one received header line to `response`: a status line ("HTTP/1.1 206 Partial
// Content") starts a new response (status set, earlier headers and body dropped, as after
// "100 Continue" or a redirect); "Name: value" appends a header with the name lower-cased and
// the value trimmed; anything else (the blank line, junk) is ignored.
void ApplyHeaderLine(std::string_view line, HttpResponse* response);

struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;   // inclusive
  uint64_t total = 0;  // 0 when "*"
};
// "bytes 100-199/1000" (or ".../*"); false when malformed or first > last.
bool ParseContentRange(std::string_view value, ContentRange* out);

}  // namespace sluice::io

// Fuzzes the HTTP response pieces sluice parses (libcurl frames the messages): header lines
// applied in sequence, and Content-Range values. No crash; header names come out lower-case
// and trimmed; a Content-Range that parses is ordered (first <= last < total).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/http_parse.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::io;  // NOLINT
  std::string_view input(reinterpret_cast<const char*>(data), size);
  HttpResponse response;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    ApplyHeaderLine(input.substr(start, end - start + (end < input.size() ? 1 : 0)), &response);
    start = end + 1;
  }
  Check(response.status >= 0 && response.status <= 999);
  for (const auto& [name, value] : response.headers) {
    Check(!name.empty());
    for (char c : name) Check(!(c >= 'A' && c <= 'Z'));
    Check(value.empty() || (value.front() != ' ' && value.back() != ' '));
    ContentRange r;
    if (ParseContentRange(value, &r))
      Check(r.first <= r.last && (r.total == 0 || r.last < r.total));
  }
  ContentRange r;
  if (ParseContentRange(input, &r)) Check(r.first <= r.last && (r.total == 0 || r.last < r.total));
  return 0;
}

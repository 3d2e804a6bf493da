// Header lines and Content-Range.
#include "io/http_parse.h"

#include <algorithm>
#include <charconv>

#include "io/http_transfer.h"

namespace sluice::io {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool ParseUint(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

void ApplyHeaderLine(std::string_view raw, HttpResponse* response) {
  std::string_view line = Trim(raw);
  if (line.starts_with("HTTP/")) {
    response->headers.clear();
    response->body.clear();
    response->status = 0;
    size_t space = line.find(' ');
    if (space != std::string_view::npos && line.size() >= space + 4) {
      // Three digits: from_chars alone would take "-10" (found by http_response_fuzz).
      std::string_view code = line.substr(space + 1, 3);
      auto digit = [](char c) { return c >= '0' && c <= '9'; };
      if (std::all_of(code.begin(), code.end(), digit)) {
        response->status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
      }
    }
    return;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  // A name that trims to nothing ("\r: x", found by http_response_fuzz) is not a header.
  std::string_view name = Trim(line.substr(0, colon));
  if (name.empty()) return;
  response->headers.emplace_back(internal::AsciiLower(name),
                                 std::string(Trim(line.substr(colon + 1))));
}

bool ParseContentRange(std::string_view v, ContentRange* out) {
  v = Trim(v);
  if (!v.starts_with("bytes ")) return false;
  v.remove_prefix(6);
  size_t dash = v.find('-'), slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return false;
  }
  ContentRange r;
  if (!ParseUint(v.substr(0, dash), &r.first) ||
      !ParseUint(v.substr(dash + 1, slash - dash - 1), &r.last) || r.first > r.last) {
    return false;
  }
  std::string_view total = v.substr(slash + 1);
  if (total != "*" && (!ParseUint(total, &r.total) || r.last >= r.total)) return false;
  *out = r;
  return true;
}

}  // namespace sluice::io

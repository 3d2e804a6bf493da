// Percent-encoding, canonical queries and endpoint parsing.
#include "io/url.h"

#include <algorithm>
#include <charconv>

namespace sluice::io {

namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

bool IsUnreservedOrSlash(unsigned char c) { return IsUnreserved(c) || c == '/'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentEncode(std::string_view s, bool (*keep)(unsigned char)) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (keep(c)) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  return PercentEncode(s, keep_slash ? IsUnreservedOrSlash : IsUnreserved);
}

Result<std::string> UriDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return InvalidArgument("bad percent escape at offset " + std::to_string(i) + " in '" +
                             std::string(s) + "'");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string CanonicalQuery(const QueryParams& params) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(params.size());
  for (const auto& [k, v] : params) encoded.emplace_back(UriEncode(k, false), UriEncode(v, false));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

std::string Endpoint::Authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + host + "]" : host;
  const bool default_port =
      port == 0 || (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  return default_port ? h : h + ":" + std::to_string(port);
}

std::string Endpoint::Origin() const { return scheme + "://" + Authority(); }

Result<Endpoint> ParseEndpoint(std::string_view url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("endpoint '" + std::string(url) + "': " + why +
                           " (expected http(s)://host[:port])");
  };
  Endpoint e;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return bad("no scheme");
  e.scheme = std::string(url.substr(0, sep));
  for (char& c : e.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (e.scheme != "http" && e.scheme != "https") return bad("scheme must be http or https");
  std::string_view rest = url.substr(sep + 3);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  e.base_path = std::string(path);
  if (authority.find('@') != std::string_view::npos) return bad("user info is not supported");
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    e.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("junk after ']'");
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (e.host.empty()) return bad("no host");
  if (!port_text.empty()) {
    int port = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port <= 0 ||
        port > 65535) {
      return bad("bad port");
    }
    e.port = port;
  }
  return e;
}

bool IsIpAddress(std::string_view host) {
  if (host.find(':') != std::string_view::npos) return true;  // IPv6
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace sluice::io

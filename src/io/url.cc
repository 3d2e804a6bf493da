// Percent-encoding, canonical queries and endpoint parsing.
#include "io/url.h"

#include <algorithm>
#include <charconv>
#include <iterator>

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
    return InvalidArgument("endpoint '" + RedactUrl(url) + "': " + why +
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

namespace {

// Query parameters whose values are secrets (case-insensitive): presigned S3 URLs, WebHDFS
// delegation tokens, and the usual names of passwords and keys.
bool IsSecretParameter(std::string_view name) {
  static const char* const kSecret[] = {"x-amz-signature",
                                        "x-amz-credential",
                                        "x-amz-security-token",
                                        "signature",
                                        "delegation",
                                        "token",
                                        "access_token",
                                        "password",
                                        "passwd",
                                        "secret",
                                        "key",
                                        "sig",
                                        "awsaccesskeyid"};
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::any_of(std::begin(kSecret), std::end(kSecret),
                     [&](const char* s) { return lower == s; });
}

// The query (and fragment) of a URL with the values of secret parameters replaced.
std::string RedactQuery(std::string_view query) {
  std::string out;
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find_first_of("&#", start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view item = query.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos && IsSecretParameter(item.substr(0, eq))) {
      out.append(item.substr(0, eq + 1)).append("***");
    } else {
      out.append(item);
    }
    if (end == query.size()) break;
    if (query[end] == '#') return out.append(query.substr(end));  // the fragment as it is
    out += '&';
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  const size_t sep = url.find("://");
  const size_t authority = sep == std::string_view::npos ? 0 : sep + 3;
  const size_t authority_end = url.find_first_of("/?#", authority);
  std::string_view host_part =
      url.substr(authority, authority_end == std::string_view::npos ? std::string_view::npos
                                                                    : authority_end - authority);
  std::string out(url.substr(0, authority));
  const size_t at = sep == std::string_view::npos ? std::string_view::npos : host_part.rfind('@');
  if (at != std::string_view::npos) {
    out += "***@";
    host_part.remove_prefix(at + 1);
  }
  out.append(host_part);
  if (authority_end == std::string_view::npos) return out;
  std::string_view rest = url.substr(authority_end);
  const size_t q = rest.find('?');
  out.append(rest.substr(0, q));
  if (q != std::string_view::npos) out += "?" + RedactQuery(rest.substr(q + 1));
  return out;
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

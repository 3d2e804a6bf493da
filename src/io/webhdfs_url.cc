// hdfs:// URIs and WebHDFS REST URLs (webhdfs_url.h).
#include "io/webhdfs_url.h"

#include <charconv>

#include "io/url.h"

namespace sluice::io::webhdfs {

namespace {

Status BadUri(std::string_view uri, std::string_view why) {
  return InvalidArgument("bad HDFS URI '" + RedactUrl(uri) + "': " + std::string(why));
}

// A DNS name or IPv4 address, or an IPv6 address in brackets.
bool ValidHost(std::string_view host) {
  bool v6 = host.front() == '[';
  if (v6) host = host.substr(1, host.size() - 2);
  for (char c : host) {
    bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
        (v6 ? c == ':' || c == '.'
            : (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z') || c == '.' || c == '-' || c == '_');
    if (!ok) return false;
  }
  return true;
}

// Splits "host[:port]" ("[v6]:port" too).
Status ParseAuthority(std::string_view uri, std::string_view authority, HdfsUri* out) {
  if (authority.find('@') != std::string_view::npos) {
    return BadUri(uri, "user info is not supported (set HADOOP_USER_NAME)");
  }
  size_t host_end = authority.front() == '[' ? authority.find(']') : authority.rfind(':');
  if (authority.front() == '[') {
    if (host_end == std::string_view::npos) return BadUri(uri, "unclosed '['");
    ++host_end;
  }
  out->host = std::string(authority.substr(0, host_end));
  if (out->host.empty() || out->host == "[]") return BadUri(uri, "no host");
  if (!ValidHost(out->host)) return BadUri(uri, "bad host name");
  if (host_end >= authority.size()) return Status::OK();
  if (authority[host_end] != ':') return BadUri(uri, "junk after the host");
  std::string_view port = authority.substr(host_end + 1);
  int value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
    return BadUri(uri, "bad port '" + std::string(port) + "'");
  }
  out->port = value;
  return Status::OK();
}

}  // namespace

std::string HdfsUri::Authority() const {
  return scheme + "://" + host + ":" + std::to_string(port);
}

std::string HdfsUri::ToString() const { return Authority() + path; }

Result<HdfsUri> ParseHdfsUri(std::string_view uri) {
  HdfsUri out;
  size_t sep = uri.find("://");
  if (sep == std::string_view::npos) return BadUri(uri, "no scheme");
  out.scheme = std::string(uri.substr(0, sep));
  if (out.scheme != "hdfs" && out.scheme != "webhdfs") {
    return BadUri(uri, "scheme is not hdfs:// or webhdfs://");
  }
  std::string_view rest = uri.substr(sep + 3);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (authority.empty()) return BadUri(uri, "no host");
  SLUICE_RETURN_IF_ERROR(ParseAuthority(uri, authority, &out));
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (!path.empty()) {
    size_t start = path.find_first_not_of('/');
    if (start == std::string_view::npos) break;
    path.remove_prefix(start);
    size_t end = path.find('/');
    std::string_view component = path.substr(0, end);
    if (component == "." || component == "..") {
      return BadUri(uri, "'.' and '..' are not HDFS path components");
    }
    out.path += '/';
    out.path += component;
    path = end == std::string_view::npos ? std::string_view() : path.substr(end);
  }
  if (out.path.empty()) out.path = "/";
  return out;
}

std::string PercentEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string RestUrl(const HdfsUri& uri, std::string_view op, std::string_view user,
                    const QueryParams& params) {
  std::string url = "http://" + uri.host + ":" + std::to_string(uri.port) + "/webhdfs/v1" +
                    PercentEncode(uri.path, /*keep_slash=*/true) + "?op=" + std::string(op);
  if (!user.empty()) url += "&user.name=" + PercentEncode(user, false);
  for (const auto& [key, value] : params) url += "&" + key + "=" + PercentEncode(value, false);
  return url;
}

}  // namespace sluice::io::webhdfs

// URL pieces the remote file systems need: RFC 3986 percent-encoding as AWS SigV4 defines it,
// endpoint parsing, and canonical query strings (one encoding serves the wire and the
// signature, so the two can never disagree).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::io {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Every byte for which `keep` is false becomes %XX (upper-case hex); the others stay.
std::string PercentEncode(std::string_view s, bool (*keep)(unsigned char));
// Keeps the unreserved characters A-Z a-z 0-9 - _ . ~ (and '/' when `keep_slash`); every
// other byte becomes %XX with upper-case hex.
std::string UriEncode(std::string_view s, bool keep_slash);
// Decodes %XX escapes ('+' stays '+'); InvalidArgument on a malformed escape.
Result<std::string> UriDecode(std::string_view s);

// "a=1&b=2": each key and value UriEncode()d, sorted by encoded key, then value; a key with
// an empty value is written "key=".
std::string CanonicalQuery(const QueryParams& params);

// An endpoint such as "https://s3.us-east-1.amazonaws.com" or "http://127.0.0.1:7480".
struct Endpoint {
  std::string scheme;     // "http" or "https"
  std::string host;       // name or address; IPv6 without brackets
  int port = 0;           // 0: the scheme's default
  std::string base_path;  // "" or "/prefix" (no trailing slash)

  // "host" or "host:port" as sent in the Host header (port only when not the default).
  std::string Authority() const;
  // "scheme://authority"
  std::string Origin() const;
};
// InvalidArgument naming the text when it is not http(s)://host[:port][/path].
Result<Endpoint> ParseEndpoint(std::string_view url);

// `url` fit to print in an error or a log: the user info of its authority ("user:secret@")
// becomes "***@", and the values of query parameters that carry secrets (X-Amz-Signature,
// X-Amz-Credential, X-Amz-Security-Token, delegation, token, password, secret, ...) become
// "***". Anything else is kept, so the message still names the host, port and path. Every
// message that prints a URL or URI someone typed goes through it: credentials never appear
// in logs, errors or stats.
std::string RedactUrl(std::string_view url);

// Whether `host` is a literal IPv4 or IPv6 address.
bool IsIpAddress(std::string_view host);

}  // namespace sluice::io

// SigV4: canonical request -> string to sign -> signing key (HMAC chain) -> signature.
#include "io/sigv4.h"

#include <algorithm>
#include <ctime>

#include "io/crypto_api.h"

namespace sluice::io {

const char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

namespace {

std::string Hex(const unsigned char* data, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 15];
  }
  return out;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  const internal::CryptoApi& crypto = internal::Crypto();
  crypto.hmac(crypto.evp_sha256(), key.data(), static_cast<int>(key.size()),
              reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

// Lower-case name; value with leading/trailing blanks removed and inner runs of blanks
// squeezed to one space.
std::string CanonicalValue(std::string_view v) {
  std::string out;
  bool blank = false;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::string Sha256Hex(ByteView data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  const internal::CryptoApi& crypto = internal::Crypto();
  crypto.evp_digest(data.data(), data.size(), digest, &n, crypto.evp_sha256(), nullptr);
  return Hex(digest, n);
}

std::string AmzDate(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

SigV4Signature SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                      std::string_view region, std::string_view service,
                      std::chrono::system_clock::time_point now) {
  const std::string amz_date = AmzDate(now);
  const std::string date = amz_date.substr(0, 8);
  SigV4Signature out;

  // One sorted list of (name, canonical value); duplicates joined with ',' in given order.
  std::vector<std::pair<std::string, std::string>> sorted;
  auto add = [&sorted](std::string_view name, std::string_view value) {
    std::string lower = LowerAscii(name);
    std::string canonical = CanonicalValue(value);
    for (auto& [n, v] : sorted) {
      if (n == lower) {
        v += ',' + canonical;
        return;
      }
    }
    sorted.emplace_back(std::move(lower), std::move(canonical));
  };
  bool has_date = false, has_token = false;
  for (const auto& [name, value] : request.headers) {
    const std::string lower = LowerAscii(name);
    has_date |= lower == "x-amz-date";
    has_token |= lower == "x-amz-security-token";
    add(name, value);
  }
  if (!has_date) {
    add("x-amz-date", amz_date);
    out.headers.emplace_back("x-amz-date", amz_date);
  }
  if (!credentials.session_token.empty() && !has_token) {
    add("x-amz-security-token", credentials.session_token);
    out.headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });

  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : sorted) {
    canonical_headers += name + ':' + value + '\n';
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += name;
  }
  out.canonical_request = std::string(request.method) + '\n' + std::string(request.canonical_uri) +
                          '\n' + std::string(request.canonical_query) + '\n' + canonical_headers +
                          '\n' + signed_headers + '\n' + std::string(request.payload_hash);

  const std::string scope =
      date + '/' + std::string(region) + '/' + std::string(service) + "/aws4_request";
  out.string_to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + '\n' + scope + '\n' + Sha256Hex(out.canonical_request);

  std::string key = Hmac("AWS4" + credentials.secret_access_key, date);
  key = Hmac(key, region);
  key = Hmac(key, service);
  key = Hmac(key, "aws4_request");
  const std::string mac = Hmac(key, out.string_to_sign);
  out.signature = Hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  out.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + '/' + scope +
                      ", SignedHeaders=" + signed_headers + ", Signature=" + out.signature;
  out.headers.emplace_back("Authorization", out.authorization);
  return out;
}

}  // namespace sluice::io

// S3's XML documents.
#include "io/s3_xml.h"

#include <charconv>
#include <cstdio>
#include <ctime>

#include "io/url.h"
#include "io/xml.h"

namespace sluice::io {

namespace {

Status Expect(const XmlElement& root, std::string_view name, std::string_view source) {
  if (root.name == name) return Status::OK();
  return DataLoss(std::string(source) + ": expected an XML <" + std::string(name) +
                  "> reply, got <" + root.name + ">");
}

Result<uint64_t> ParseSize(const std::string& text, std::string_view source) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) {
    return DataLoss(std::string(source) + ": listing has an object <Size> of '" + text + "'");
  }
  return v;
}

Result<std::string> Decoded(const std::string& text, std::string_view source) {
  auto r = UriDecode(text);
  if (!r.ok()) return DataLoss(std::string(source) + ": listing: " + r.status().message());
  return r;
}

// Milliseconds since the epoch of a UTC calendar time; 0 when a field is out of range.
int64_t UtcMs(int year, int month, int day, int hour, int minute, int second, int ms) {
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 ||
      second > 60 || ms < 0 || ms > 999) {
    return 0;
  }
  std::tm t{};
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  return static_cast<int64_t>(timegm(&t)) * 1000 + ms;
}

}  // namespace

int64_t ParseIso8601Ms(std::string_view text) {
  int y, mo, d, h, mi, s, n = 0;
  const std::string z(text);
  if (std::sscanf(z.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6) {
    return 0;
  }
  int ms = 0;
  if (z.size() > static_cast<size_t>(n) + 1 && z[static_cast<size_t>(n)] == '.') {
    // Fractional seconds: the first three digits are milliseconds.
    int scale = 100;
    for (size_t i = static_cast<size_t>(n) + 1; i < z.size() && z[i] >= '0' && z[i] <= '9';
         ++i, scale /= 10) {
      ms += (z[i] - '0') * scale;
      if (scale == 1) break;
    }
  }
  return UtcMs(y, mo, d, h, mi, s, ms);
}

int64_t ParseHttpDateMs(std::string_view text) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int d, y, h, mi, s;
  char month[4] = {0};
  const std::string z(text);
  if (std::sscanf(z.c_str(), "%*3s, %2d %3s %4d %2d:%2d:%2d GMT", &d, month, &y, &h, &mi, &s) !=
      6) {
    return 0;
  }
  for (int m = 0; m < 12; ++m) {
    if (std::string_view(month) == kMonths[m]) return UtcMs(y, m + 1, d, h, mi, s, 0);
  }
  return 0;
}

Result<S3ListPage> ParseListObjectsV2(std::string_view xml, std::string_view source) {
  SLUICE_ASSIGN_OR_RETURN(XmlElement root, ParseXml(xml, source));
  SLUICE_RETURN_IF_ERROR(Expect(root, "ListBucketResult", source));
  S3ListPage page;
  const bool url_encoded = root.ChildText("EncodingType") == "url";
  for (const XmlElement& e : root.children) {
    if (e.name == "Contents") {
      S3ObjectEntry entry;
      if (url_encoded) {
        SLUICE_ASSIGN_OR_RETURN(entry.key, Decoded(e.ChildText("Key"), source));
      } else {
        entry.key = e.ChildText("Key");
      }
      SLUICE_ASSIGN_OR_RETURN(entry.size, ParseSize(e.ChildText("Size"), source));
      entry.etag = e.ChildText("ETag");
      entry.last_modified_ms = ParseIso8601Ms(e.ChildText("LastModified"));
      page.objects.push_back(std::move(entry));
    } else if (e.name == "CommonPrefixes") {
      const std::string& prefix = e.ChildText("Prefix");
      if (url_encoded) {
        SLUICE_ASSIGN_OR_RETURN(std::string decoded, Decoded(prefix, source));
        page.prefixes.push_back(std::move(decoded));
      } else {
        page.prefixes.push_back(prefix);
      }
    }
  }
  page.truncated = root.ChildText("IsTruncated") == "true";
  page.next_token = root.ChildText("NextContinuationToken");
  if (page.truncated && page.next_token.empty()) {
    return DataLoss(std::string(source) +
                    ": listing is truncated but has no NextContinuationToken");
  }
  return page;
}

Result<std::string> ParseInitiateMultipartUpload(std::string_view xml, std::string_view source) {
  SLUICE_ASSIGN_OR_RETURN(XmlElement root, ParseXml(xml, source));
  SLUICE_RETURN_IF_ERROR(Expect(root, "InitiateMultipartUploadResult", source));
  const std::string& id = root.ChildText("UploadId");
  if (id.empty()) return DataLoss(std::string(source) + ": multipart upload reply has no UploadId");
  return id;
}

std::string CompleteMultipartUploadBody(const std::vector<std::pair<int, std::string>>& parts) {
  std::string out = "<CompleteMultipartUpload>";
  for (const auto& [number, etag] : parts) {
    out += "<Part><PartNumber>" + std::to_string(number) + "</PartNumber><ETag>" + XmlEscape(etag) +
           "</ETag></Part>";
  }
  out += "</CompleteMultipartUpload>";
  return out;
}

std::string DeleteObjectsBody(const std::vector<std::string>& keys) {
  std::string out = "<Delete><Quiet>true</Quiet>";
  for (const std::string& key : keys) out += "<Object><Key>" + XmlEscape(key) + "</Key></Object>";
  out += "</Delete>";
  return out;
}

Result<std::vector<S3DeleteFailure>> ParseDeleteObjectsResult(std::string_view xml,
                                                              std::string_view source) {
  SLUICE_ASSIGN_OR_RETURN(XmlElement root, ParseXml(xml, source));
  SLUICE_RETURN_IF_ERROR(Expect(root, "DeleteResult", source));
  std::vector<S3DeleteFailure> failures;
  for (const XmlElement& e : root.children) {
    if (e.name != "Error") continue;
    failures.push_back({e.ChildText("Key"), e.ChildText("Code"), e.ChildText("Message")});
  }
  return failures;
}

std::optional<S3ErrorDocument> ParseS3ErrorDocument(std::string_view body) {
  if (body.find("<Error") == std::string_view::npos) return std::nullopt;
  auto root = ParseXml(body, "error reply");
  if (!root.ok() || root->name != "Error") return std::nullopt;
  S3ErrorDocument doc;
  doc.code = root->ChildText("Code");
  doc.message = root->ChildText("Message");
  doc.request_id = root->ChildText("RequestId");
  doc.region = root->ChildText("Region");
  if (doc.code.empty()) return std::nullopt;
  return doc;
}

}  // namespace sluice::io

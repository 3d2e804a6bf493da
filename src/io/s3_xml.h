// The S3 XML documents sluice reads and writes: ListObjectsV2 pages, multipart upload
// replies, DeleteObjects, and error documents. Pure functions over text, fuzzed in
// tests/fuzz/s3_xml_fuzz.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::io {

struct S3ObjectEntry {
  std::string key;
  uint64_t size = 0;
  std::string etag;
  int64_t last_modified_ms = 0;  // <LastModified>; 0 when absent or unreadable
};

// S3's two spellings of a time, as milliseconds since the Unix epoch (0 when `text` is not
// one): ISO 8601 in XML ("2026-12-01T23:05:09.123Z") and the HTTP date of a Last-Modified
// header ("Tue, 01 Dec 2026 23:05:09 GMT", RFC 9110's IMF-fixdate).
int64_t ParseIso8601Ms(std::string_view text);
int64_t ParseHttpDateMs(std::string_view text);

struct S3ListPage {
  std::vector<S3ObjectEntry> objects;
  std::vector<std::string> prefixes;  // CommonPrefixes, with their trailing delimiter
  bool truncated = false;
  std::string next_token;  // NextContinuationToken when truncated
};

// A ListObjectsV2 reply requested with encoding-type=url (keys and prefixes are decoded
// here). DataLoss naming `source` when the document is not one, or when it says it is
// truncated without a continuation token (which would make a listing loop forever).
Result<S3ListPage> ParseListObjectsV2(std::string_view xml, std::string_view source);

// The UploadId of an InitiateMultipartUploadResult.
Result<std::string> ParseInitiateMultipartUpload(std::string_view xml, std::string_view source);

// The CompleteMultipartUpload request body for parts (part number, ETag as returned).
std::string CompleteMultipartUploadBody(const std::vector<std::pair<int, std::string>>& parts);

// The DeleteObjects request body (quiet mode: only failures are reported back).
std::string DeleteObjectsBody(const std::vector<std::string>& keys);
struct S3DeleteFailure {
  std::string key, code, message;
};
// The failures listed in a DeleteResult.
Result<std::vector<S3DeleteFailure>> ParseDeleteObjectsResult(std::string_view xml,
                                                              std::string_view source);

struct S3ErrorDocument {
  std::string code;     // "NoSuchKey"
  std::string message;  // "The specified key does not exist."
  std::string request_id;
  std::string region;  // <Region>, sent with redirects to another region
};
// An <Error> document, or nullopt when `body` is not one (empty, HTML from a proxy, ...).
std::optional<S3ErrorDocument> ParseS3ErrorDocument(std::string_view body);

}  // namespace sluice::io

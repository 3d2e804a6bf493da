// Fuzzes the S3 XML documents sluice reads (ListObjectsV2 pages, multipart replies,
// DeleteObjects results, error documents): no crash, no hang, and what parses is sane:
//   - a listing that says it is truncated always has a continuation token (else a listing
//     loop could spin forever);
//   - a parsed upload id is never empty;
//   - an error document always has a code, and S3ErrorCode agrees with it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/s3_errors.h"
#include "io/s3_xml.h"
#include "io/xml.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::io;  // NOLINT
  std::string_view doc(reinterpret_cast<const char*>(data), size);
  auto page = ParseListObjectsV2(doc, "fuzz");
  if (page.ok() && page->truncated) Check(!page->next_token.empty());
  auto id = ParseInitiateMultipartUpload(doc, "fuzz");
  if (id.ok()) Check(!id->empty());
  (void)ParseDeleteObjectsResult(doc, "fuzz");
  auto error = ParseS3ErrorDocument(doc);
  if (error.has_value()) {
    Check(!error->code.empty());
    Check(S3ErrorCode(500, doc) == error->code);
  }
  auto tree = ParseXml(doc, "fuzz");
  if (tree.ok()) Check(!tree->name.empty());
  // Escaped text stays well-formed inside an element.
  std::string wrapped = "<a>" + XmlEscape(doc) + "</a>";
  auto again = ParseXml(wrapped, "fuzz");
  (void)again;  // invalid UTF-8 in `doc` may still be rejected by expat
  return 0;
}

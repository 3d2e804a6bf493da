// EncodeDocuments: the invalid-UTF-8 policy in front of Tokenizer::EncodeBatch.
#include "sluice/text/encode_documents.h"

#include <algorithm>

#include "sluice/text/utf8.h"

namespace sluice::text {

Status EncodeDocuments(const Tokenizer& tokenizer, std::string_view file,
                       std::span<const TextDocument> docs, const EncodeDocumentsOptions& options,
                       RaggedIds* out, std::vector<TextDocument>* skipped) {
  std::vector<std::string_view> texts;
  texts.reserve(docs.size());
  for (const TextDocument& doc : docs) {
    if (options.invalid_utf8 != InvalidUtf8Policy::kReplace) {
      if (auto bad = FindInvalidUtf8(doc.text)) {
        if (options.invalid_utf8 == InvalidUtf8Policy::kRaise) {
          // A paragraph's bad byte may sit on a later line than its first: count the '\n's.
          const std::string_view before = doc.text.substr(0, *bad);
          const size_t last_nl = before.rfind('\n');
          const uint64_t line =
              doc.line + static_cast<uint64_t>(std::count(before.begin(), before.end(), '\n'));
          const size_t line_start = last_nl == std::string_view::npos ? 0 : last_nl + 1;
          return InvalidUtf8Error(file, doc.offset + line_start, line, doc.text.substr(line_start),
                                  *bad - line_start);
        }
        if (skipped != nullptr) skipped->push_back(doc);
        continue;
      }
    }
    texts.push_back(doc.text);
  }
  return tokenizer.EncodeBatch(texts, options.threads, out);
}

}  // namespace sluice::text

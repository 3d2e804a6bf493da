// Tokenizing the documents of a text file with the dataset's policy for invalid UTF-8: the
// core of `sluice convert text|jsonl --tokenizer` (docs/text.md, "Invalid UTF-8").
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/text/plain_text.h"
#include "sluice/text/token_ids.h"
#include "sluice/text/tokenizer.h"

namespace sluice::text {

enum class InvalidUtf8Policy {
  kRaise,    // Default: the first bad document is a DataLoss naming file, offset and line
  kSkip,     // leave bad documents out and list them (quarantine = skip + write the list)
  kReplace,  // tokenize them anyway: SentencePiece turns each bad byte into U+FFFD
};

struct EncodeDocumentsOptions {
  InvalidUtf8Policy invalid_utf8 = InvalidUtf8Policy::kRaise;  // Default: raise
  size_t threads = 0;  // Default: 0, ThreadPool::DefaultThreads()
};

// Encodes `docs` (from SplitText over the contents of `file`, which only names errors) into
// *out, one row per document kept, in order. Documents left out under kSkip are appended to
// *skipped (may be null otherwise). Under kRaise nothing is encoded when a document is bad.
Status EncodeDocuments(const Tokenizer& tokenizer, std::string_view file,
                       std::span<const TextDocument> docs, const EncodeDocumentsOptions& options,
                       RaggedIds* out, std::vector<TextDocument>* skipped);

}  // namespace sluice::text

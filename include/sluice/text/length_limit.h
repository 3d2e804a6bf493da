// What happens to documents longer than a limit: truncated, split into pieces, dropped, or
// an error (docs/text.md, "Over-long documents"). Zero copy: pieces are subspans.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/text/token_ids.h"

namespace sluice::text {

enum class LongDocumentPolicy {
  kTruncate,  // keep the first max_length ids (what tokenizers' truncation=True does)
  kSplit,     // cut into consecutive pieces of max_length; the last piece may be shorter
  kDrop,      // leave the document out (the caller counts it)
  kError,     // ResourceExhausted naming the document
};

struct LengthLimit {
  size_t max_length = 0;                                      // Default: 0, no limit
  LongDocumentPolicy policy = LongDocumentPolicy::kTruncate;  // Default: truncate
};

// Appends the piece(s) `doc` becomes under `limit` to *out: itself when it fits (or there is
// no limit), its prefix, its pieces, or nothing. An empty document stays one empty piece.
// `doc_index` only names the document in the kError message.
template <TokenId T>
Status ApplyLengthLimit(std::span<const T> doc, const LengthLimit& limit, uint64_t doc_index,
                        std::vector<std::span<const T>>* out) {
  if (limit.max_length == 0 || doc.size() <= limit.max_length) {
    out->push_back(doc);
    return Status::OK();
  }
  switch (limit.policy) {
    case LongDocumentPolicy::kTruncate:
      out->push_back(doc.first(limit.max_length));
      break;
    case LongDocumentPolicy::kSplit:
      for (size_t at = 0; at < doc.size(); at += limit.max_length) {
        out->push_back(doc.subspan(at, std::min(limit.max_length, doc.size() - at)));
      }
      break;
    case LongDocumentPolicy::kDrop:
      break;
    case LongDocumentPolicy::kError:
      return ResourceExhausted("document " + std::to_string(doc_index) + " has " +
                               std::to_string(doc.size()) + " tokens, over the limit of " +
                               std::to_string(limit.max_length));
  }
  return Status::OK();
}

}  // namespace sluice::text

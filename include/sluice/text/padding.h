// Dynamic padding: a batch of documents becomes a rows x cols matrix of ids plus an
// attention mask, with cols the longest document rounded up to pad_to_multiple_of
// (docs/text.md, "Padding"). Pure function over spans; the output buffers are reused.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/text/token_ids.h"

namespace sluice::text {

enum class PadSide {
  kRight,  // ids first, then padding (training)
  kLeft,   // padding first (batched generation, where every row must end at its last id)
};

struct PaddingOptions {
  int32_t pad_id = 0;             // Default: 0
  size_t pad_to_multiple_of = 8;  // Default: 8 (tensor-core friendly shapes); 0 or 1: exact
  // Default: 0, dynamic: cols is the longest document (rounded). Otherwise every batch has
  // exactly this many columns (tf.data's padded_shapes); a longer document is
  // InvalidArgument, so apply a LengthLimit first.
  size_t fixed_length = 0;
  PadSide side = PadSide::kRight;  // Default: right
};

struct PaddedBatch {
  size_t rows = 0, cols = 0;
  std::vector<int32_t> tokens;          // rows * cols, row-major
  std::vector<uint8_t> attention_mask;  // rows * cols: 1 for a real token, 0 for padding
  std::vector<int32_t> lengths;         // rows: real tokens in each row

  TokenCounts counts() const;
};

// Fills *out (reusing its capacity) from `docs`. An empty batch gives rows = cols = 0.
// Errors: InvalidArgument for a document longer than fixed_length or an id outside
// [0, INT32_MAX] (naming the document's index in the batch).
template <TokenId T>
Status PadBatch(std::span<const std::span<const T>> docs, const PaddingOptions& options,
                PaddedBatch* out);

// The number of columns PadBatch uses for documents whose longest has `longest` ids.
size_t PaddedLength(size_t longest, const PaddingOptions& options);

extern template Status PadBatch(std::span<const std::span<const int32_t>>, const PaddingOptions&,
                                PaddedBatch*);
extern template Status PadBatch(std::span<const std::span<const int64_t>>, const PaddingOptions&,
                                PaddedBatch*);
extern template Status PadBatch(std::span<const std::span<const uint16_t>>, const PaddingOptions&,
                                PaddedBatch*);
extern template Status PadBatch(std::span<const std::span<const uint32_t>>, const PaddingOptions&,
                                PaddedBatch*);

}  // namespace sluice::text

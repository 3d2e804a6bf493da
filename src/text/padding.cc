// Dynamic padding (docs/text.md, "Padding").
#include "sluice/text/padding.h"

#include <algorithm>
#include <string>

#include "text/copy_ids.h"

namespace sluice::text {

TokenCounts PaddedBatch::counts() const {
  TokenCounts c;
  for (int32_t len : lengths) c.real += static_cast<uint64_t>(len);
  c.total = static_cast<uint64_t>(rows) * cols;
  return c;
}

size_t PaddedLength(size_t longest, const PaddingOptions& options) {
  if (options.fixed_length > 0) return options.fixed_length;
  const size_t m = std::max<size_t>(options.pad_to_multiple_of, 1);
  return (longest + m - 1) / m * m;
}

template <TokenId T>
Status PadBatch(std::span<const std::span<const T>> docs, const PaddingOptions& options,
                PaddedBatch* out) {
  size_t longest = 0;
  for (const auto& d : docs) longest = std::max(longest, d.size());
  const size_t cols = PaddedLength(longest, options);
  if (longest > cols) {
    return InvalidArgument("padding: a document of " + std::to_string(longest) +
                           " tokens does not fit fixed_length " + std::to_string(cols));
  }
  out->rows = docs.size();
  out->cols = cols;
  // assign() rewrites every slot: padding first, then each row's ids over it.
  out->tokens.assign(out->rows * cols, options.pad_id);
  out->attention_mask.assign(out->rows * cols, 0);
  out->lengths.resize(out->rows);
  for (size_t r = 0; r < docs.size(); ++r) {
    const size_t len = docs[r].size();
    const size_t start = r * cols + (options.side == PadSide::kLeft ? cols - len : 0);
    if (!internal::CopyIds(docs[r], out->tokens.data() + start)) {
      return InvalidArgument("padding: document " + std::to_string(r) +
                             " has an id outside [0, 2^31)");
    }
    std::fill_n(out->attention_mask.begin() + static_cast<ptrdiff_t>(start), len, uint8_t{1});
    out->lengths[r] = static_cast<int32_t>(len);
  }
  return Status::OK();
}

template Status PadBatch(std::span<const std::span<const int32_t>>, const PaddingOptions&,
                         PaddedBatch*);
template Status PadBatch(std::span<const std::span<const int64_t>>, const PaddingOptions&,
                         PaddedBatch*);
template Status PadBatch(std::span<const std::span<const uint16_t>>, const PaddingOptions&,
                         PaddedBatch*);
template Status PadBatch(std::span<const std::span<const uint32_t>>, const PaddingOptions&,
                         PaddedBatch*);

}  // namespace sluice::text

// batch, padded_batch and bucket_by_length: stack elements into one contiguous buffer per
// feature (docs/pipeline.md, "Batching").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sluice::pipeline {

struct BatchOptions {
  size_t batch_size = 32;       // Default: 32
  bool drop_remainder = false;  // Default: false (the last batch may be smaller)
};

// How padded_batch and bucket_by_length pad: every dimension of every non-scalar feature is
// padded to the longest in the batch, rounded up to `pad_to_multiple_of`.
struct PaddingOptions {
  size_t pad_to_multiple_of = 1;             // Default: 1 (no rounding)
  std::map<std::string, double> pad_values;  // Default: 0 (numbers), "" (strings)
  // For each padded feature add "<name>_mask" (uint8 [batch, padded length of dim 0]):
  // 1 where the element had data. Default: true.
  bool masks = true;
  // Where the first dimension's padding goes: after the data (kRight, as tf.data) or before
  // it (kLeft: the data ends at the last position, as batched generation with a decoder
  // wants; Hugging Face's padding_side="left"). Other dimensions are always padded after
  // the data. Default: kRight.
  enum class Side { kRight, kLeft };
  Side side = Side::kRight;
  // Fixed first-dimension lengths, per feature: padded to exactly this length whatever the
  // batch holds (static shapes, e.g. for XLA; tf.data's padded_shapes). An element longer
  // than it is an InvalidArgument naming its record: truncate before batching.
  // pad_to_multiple_of does not round these. Default: none.
  std::map<std::string, int64_t> lengths;
};

struct PaddedBatchOptions {
  size_t batch_size = 32;       // Default: 32
  bool drop_remainder = false;  // Default: false
  PaddingOptions padding;
};

// Elements go to bucket i when boundaries[i-1] <= length < boundaries[i] (length = the
// first dimension of `length_feature`); a bucket emits a padded batch of batch_sizes[i]
// when full. batch_sizes has boundaries.size() + 1 entries.
struct BucketOptions {
  std::string length_feature;
  std::vector<int64_t> boundaries;
  std::vector<size_t> batch_sizes;
  bool drop_remainder = false;  // Default: false (partial buckets flush at the end)
  PaddingOptions padding;
};

}  // namespace sluice::pipeline

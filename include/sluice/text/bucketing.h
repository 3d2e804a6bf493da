// Length bucketing (tf.data's bucket_by_sequence_length): documents are grouped by length
// into buckets, each with its own batch size, so that a batch holds documents of similar
// length and dynamic padding wastes little (docs/text.md, "Bucketing").
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::text {

struct BucketingOptions {
  // Ascending, distinct, > 0. Bucket i holds lengths in [boundaries[i-1], boundaries[i]);
  // bucket 0 starts at 0 and the last bucket (index boundaries.size()) has no upper bound.
  std::vector<size_t> boundaries;
  // One per bucket: boundaries.size() + 1 entries, each > 0.
  std::vector<size_t> batch_sizes;
  // At the end of input, partial batches are dropped rather than emitted.
  bool drop_remainder = false;  // Default: false
};

// Groups element ids by their length. Deterministic: the same (id, length) sequence gives the
// same batches. Memory: at most sum(batch_sizes) pending ids.
// Threading: not thread-safe.
class LengthBucketer {
 public:
  // InvalidArgument for unsorted/duplicate/zero boundaries or a wrong number of batch sizes.
  static Result<LengthBucketer> Create(BucketingOptions options);

  size_t num_buckets() const { return options_.batch_sizes.size(); }
  size_t BucketFor(size_t length) const;

  // Adds element `id` with `length`. When that fills its bucket, moves the bucket's ids (in
  // the order added) into *batch, replacing its content, and returns true.
  bool Add(uint64_t id, size_t length, std::vector<uint64_t>* batch);
  // After the last Add: moves the next non-empty partial bucket (lowest bucket first) into
  // *batch and returns true; false when none is left. With drop_remainder it discards them
  // and returns false.
  bool Flush(std::vector<uint64_t>* batch);

  // Pending ids per bucket, for saving an iterator's state; Restore puts them back into a
  // bucketer created with the same options (InvalidArgument if they do not fit).
  const std::vector<std::vector<uint64_t>>& pending() const { return pending_; }
  Status Restore(std::vector<std::vector<uint64_t>> pending);

 private:
  explicit LengthBucketer(BucketingOptions options);

  BucketingOptions options_;
  std::vector<std::vector<uint64_t>> pending_;  // per bucket, each below its batch size
};

// Boundaries from a sample of document lengths such that each of `num_buckets` buckets holds
// about the same number of tokens (not documents: padding waste is counted in tokens, and a
// few long documents carry many of them). Deduplicated, so repeated lengths can yield fewer
// buckets.
std::vector<size_t> BalancedBoundaries(std::span<const size_t> lengths, size_t num_buckets);

// Boundaries 1, 2, ... growing by `ratio` (at least 1 each step) up to `max_length`: every
// bucket spans at most a `ratio - 1` fraction of its lower bound, so exact dynamic padding
// within a bucket wastes at most about that much. Needs ratio > 1.
std::vector<size_t> GeometricBoundaries(size_t max_length, double ratio);

// Batch sizes that keep every batch near `max_tokens` slots: bucket i gets
// max(1, max_tokens / L_i) where L_i is the longest length it admits (boundaries[i] - 1;
// `max_length` for the last bucket).
std::vector<size_t> BatchSizesForTokenBudget(std::span<const size_t> boundaries, size_t max_tokens,
                                             size_t max_length);

}  // namespace sluice::text

// Choosing the boundaries and batch sizes of the pipeline's bucket_by_length stage (the one
// bucketing implementation, include/sluice/pipeline/batch.h) for token sequences, so that a
// batch holds documents of similar length and padding wastes little (docs/text.md,
// "Bucketing").
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::text {

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

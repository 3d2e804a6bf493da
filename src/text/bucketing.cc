// Choosing bucket_by_length boundaries and batch sizes (docs/text.md, "Bucketing").
#include "sluice/text/bucketing.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::text {

std::vector<size_t> BalancedBoundaries(std::span<const size_t> lengths, size_t num_buckets) {
  std::vector<size_t> sorted(lengths.begin(), lengths.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> bounds;
  uint64_t total = 0;
  for (size_t l : sorted) total += l;
  if (total == 0 || num_buckets < 2) return bounds;
  uint64_t seen = 0;
  size_t q = 1;  // the next bucket edge to place, at q / num_buckets of the tokens
  for (size_t l : sorted) {
    seen += l;
    // Place every edge whose token share this length reaches: just above it, so it falls
    // below the edge; equal edges collapse.
    while (q < num_buckets && seen * num_buckets >= total * q) {
      if (bounds.empty() || l + 1 > bounds.back()) bounds.push_back(l + 1);
      ++q;
    }
  }
  if (!bounds.empty() && bounds.back() > sorted.back()) bounds.pop_back();  // empty last bucket
  return bounds;
}

std::vector<size_t> GeometricBoundaries(size_t max_length, double ratio) {
  std::vector<size_t> bounds;
  if (!(ratio > 1.0)) return bounds;
  for (size_t b = 1; b < max_length;) {
    b = std::max(b + 1, static_cast<size_t>(std::ceil(static_cast<double>(b) * ratio)));
    bounds.push_back(std::min(b, max_length));
  }
  return bounds;
}

std::vector<size_t> BatchSizesForTokenBudget(std::span<const size_t> boundaries, size_t max_tokens,
                                             size_t max_length) {
  std::vector<size_t> sizes;
  for (size_t i = 0; i <= boundaries.size(); ++i) {
    const size_t longest = i < boundaries.size() ? boundaries[i] - 1 : max_length;
    sizes.push_back(std::max<size_t>(1, max_tokens / std::max<size_t>(longest, 1)));
  }
  return sizes;
}

}  // namespace sluice::text

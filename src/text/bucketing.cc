// Length bucketing (docs/text.md, "Bucketing").
#include "sluice/text/bucketing.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::text {

LengthBucketer::LengthBucketer(BucketingOptions options)
    : options_(std::move(options)), pending_(options_.batch_sizes.size()) {
  for (size_t b = 0; b < pending_.size(); ++b) pending_[b].reserve(options_.batch_sizes[b]);
}

Result<LengthBucketer> LengthBucketer::Create(BucketingOptions options) {
  const auto& bounds = options.boundaries;
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (bounds[i] == 0 || (i > 0 && bounds[i] <= bounds[i - 1])) {
      return InvalidArgument(
          "bucketing: boundaries must be positive and strictly ascending "
          "(boundary " +
          std::to_string(i) + " is " + std::to_string(bounds[i]) + ")");
    }
  }
  if (options.batch_sizes.size() != bounds.size() + 1) {
    return InvalidArgument("bucketing: " + std::to_string(bounds.size()) + " boundaries need " +
                           std::to_string(bounds.size() + 1) + " batch sizes, got " +
                           std::to_string(options.batch_sizes.size()));
  }
  for (size_t s : options.batch_sizes) {
    if (s == 0) return InvalidArgument("bucketing: batch sizes must be positive");
  }
  return LengthBucketer(std::move(options));
}

size_t LengthBucketer::BucketFor(size_t length) const {
  const auto& b = options_.boundaries;
  return static_cast<size_t>(std::upper_bound(b.begin(), b.end(), length) - b.begin());
}

bool LengthBucketer::Add(uint64_t id, size_t length, std::vector<uint64_t>* batch) {
  const size_t b = BucketFor(length);
  pending_[b].push_back(id);
  if (pending_[b].size() < options_.batch_sizes[b]) return false;
  batch->swap(pending_[b]);  // hands over the full bucket, keeps *batch's old buffer
  pending_[b].clear();
  pending_[b].reserve(options_.batch_sizes[b]);
  return true;
}

bool LengthBucketer::Flush(std::vector<uint64_t>* batch) {
  for (auto& bucket : pending_) {
    if (bucket.empty()) continue;
    if (options_.drop_remainder) {
      bucket.clear();
      continue;
    }
    batch->swap(bucket);
    bucket.clear();
    return true;
  }
  return false;
}

Status LengthBucketer::Restore(std::vector<std::vector<uint64_t>> pending) {
  if (pending.size() != num_buckets()) {
    return InvalidArgument("bucketing: restoring " + std::to_string(pending.size()) +
                           " buckets into a bucketer with " + std::to_string(num_buckets()));
  }
  for (size_t b = 0; b < pending.size(); ++b) {
    if (pending[b].size() >= options_.batch_sizes[b]) {
      return InvalidArgument("bucketing: restored bucket " + std::to_string(b) +
                             " holds a full batch or more");
    }
  }
  pending_ = std::move(pending);
  return Status::OK();
}

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

// Sequence packing (docs/text.md, "Packing").
#include "sluice/text/packing.h"

#include <algorithm>
#include <string>

#include "text/copy_ids.h"

namespace sluice::text {

TokenCounts PackedBatch::counts() const {
  TokenCounts c;
  c.total = segment_ids.size();
  c.real = static_cast<uint64_t>(
      std::count_if(segment_ids.begin(), segment_ids.end(), [](int32_t s) { return s != 0; }));
  return c;
}

Result<SequencePacker> SequencePacker::Create(const PackingOptions& options) {
  if (options.seq_len == 0) return InvalidArgument("packing: seq_len must be positive");
  return SequencePacker(options);
}

template <TokenId T>
Status SequencePacker::Add(std::span<const T> ids, size_t first) {
  if (finished_) return FailedPrecondition("packing: Add after Finish");
  if (first > ids.size()) {
    return InvalidArgument("packing: resume offset " + std::to_string(first) +
                           " past the end of a " + std::to_string(ids.size()) + "-token document");
  }
  const auto rest = ids.subspan(first);
  scratch_.resize(rest.size());
  if (!internal::CopyIds(rest, scratch_.data())) {
    return InvalidArgument("packing: document " + std::to_string(documents_) +
                           " has an id outside [0, 2^31)");
  }
  if (options_.eos_id >= 0) scratch_.push_back(options_.eos_id);
  Emit(scratch_.data(), scratch_.size(), first);
  ++documents_;
  return Status::OK();
}

template Status SequencePacker::Add(std::span<const int32_t>, size_t);
template Status SequencePacker::Add(std::span<const int64_t>, size_t);
template Status SequencePacker::Add(std::span<const uint16_t>, size_t);
template Status SequencePacker::Add(std::span<const uint32_t>, size_t);

void SequencePacker::Emit(const int32_t* ids, size_t count, size_t doc_offset) {
  const size_t seq_len = options_.seq_len;
  size_t k = 0;
  while (k < count) {
    if (fill() == 0) {  // a new sequence begins here
      starts_.emplace_back(documents_, doc_offset + k);
      segment_ = 0;
    }
    // Each document, and each continuation of one in a new sequence, is a new segment.
    if (k == 0 || fill() == 0) ++segment_;
    const size_t n = std::min(count - k, seq_len - fill());
    tokens_.insert(tokens_.end(), ids + k, ids + k + n);
    segments_.insert(segments_.end(), n, segment_);
    const size_t base = options_.continue_positions ? doc_offset + k : 0;
    for (size_t j = 0; j < n; ++j) positions_.push_back(static_cast<int32_t>(base + j));
    k += n;
    if (fill() == seq_len) ++ready_;
  }
}

void SequencePacker::Finish() {
  if (finished_) return;
  finished_ = true;
  const size_t partial = fill();
  if (partial == 0) return;
  if (options_.drop_remainder) {
    const size_t keep = ready_ * options_.seq_len;
    tokens_.resize(keep);
    segments_.resize(keep);
    positions_.resize(keep);
    starts_.pop_back();
    return;
  }
  const size_t pad = options_.seq_len - partial;
  tokens_.insert(tokens_.end(), pad, options_.pad_id);
  segments_.insert(segments_.end(), pad, 0);
  positions_.insert(positions_.end(), pad, 0);
  ++ready_;
}

size_t SequencePacker::Take(size_t rows, PackedBatch* out) {
  const size_t m = std::min(rows, ready_);
  const auto n = static_cast<ptrdiff_t>(m * options_.seq_len);
  out->rows = m;
  out->seq_len = options_.seq_len;
  out->tokens.assign(tokens_.begin(), tokens_.begin() + n);
  out->segment_ids.assign(segments_.begin(), segments_.begin() + n);
  out->position_ids.assign(positions_.begin(), positions_.begin() + n);
  // The erase moves only what is left: the partial sequence and ready ones not taken.
  tokens_.erase(tokens_.begin(), tokens_.begin() + n);
  segments_.erase(segments_.begin(), segments_.begin() + n);
  positions_.erase(positions_.begin(), positions_.begin() + n);
  starts_.erase(starts_.begin(), starts_.begin() + static_cast<ptrdiff_t>(m));
  ready_ -= m;
  return m;
}

std::pair<uint64_t, size_t> SequencePacker::ResumePoint() const {
  if (!starts_.empty()) return starts_.front();
  return {documents_, 0};
}

}  // namespace sluice::text

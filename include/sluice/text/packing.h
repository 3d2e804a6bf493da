// Sequence packing: documents are concatenated into sequences of exactly seq_len tokens,
// with segment ids (which document of the sequence a token belongs to) and position ids
// (restarting at each document), so a model can mask attention between documents and no
// compute goes to padding (docs/text.md, "Packing").
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/text/token_ids.h"

namespace sluice::text {

struct PackingOptions {
  size_t seq_len = 2048;  // Default: 2048 tokens per sequence
  // Appended after every document as its last token (same segment, next position), so the
  // model learns where documents end. Default: -1, nothing appended.
  int32_t eos_id = -1;
  int32_t pad_id = 0;  // Default: 0. Fills the tail of the final sequence only.
  // A document that does not fit continues at the start of the next sequence as that
  // sequence's segment 1. Its position ids restart at 0 there by default, so they never
  // exceed seq_len - 1 (learned position tables have seq_len rows); true continues them
  // from where the document left off (for rotary or ALiBi models). Default: false
  bool continue_positions = false;
  // At the end of input, a partial final sequence is dropped rather than padded.
  bool drop_remainder = false;  // Default: false
};

struct PackedBatch {
  size_t rows = 0, seq_len = 0;
  std::vector<int32_t> tokens;        // rows * seq_len
  std::vector<int32_t> segment_ids;   // 1, 2, ... per document within a row; 0 = padding
  std::vector<int32_t> position_ids;  // 0, 1, ... within each segment; 0 for padding

  TokenCounts counts() const;  // real = slots with a segment id
};

// Streaming packer: Add documents, Take full sequences. Memory: the sequences not yet taken
// (completed ones plus the one being filled). Threading: not thread-safe.
class SequencePacker {
 public:
  // InvalidArgument for seq_len 0.
  static Result<SequencePacker> Create(const PackingOptions& options);

  // Appends document ids[first, end) (plus eos_id). `first` > 0 resumes a document part-way
  // (see ResumePoint); with continue_positions its positions start at `first`.
  // InvalidArgument for an id outside [0, 2^31) or first > ids.size(); the packer is
  // unchanged then.
  template <TokenId T>
  Status Add(std::span<const T> ids, size_t first = 0);
  // End of input: the partial sequence, if any, is padded and becomes ready (or dropped).
  void Finish();

  size_t ready() const { return ready_; }  // complete sequences waiting to be taken
  // Moves up to `rows` ready sequences into *out (replacing its content, reusing its
  // buffers) and returns how many.
  size_t Take(size_t rows, PackedBatch* out);

  // Where the first sequence not yet taken begins: (document, offset) with documents
  // counted by Add calls from 0. An iterator saves this; to restore, it creates a fresh
  // packer and re-adds that document from `offset`, then the documents after it. The
  // stream of sequences is then the same as without the interruption.
  std::pair<uint64_t, size_t> ResumePoint() const;

 private:
  explicit SequencePacker(const PackingOptions& options) : options_(options) {}
  // Appends `count` tokens of the current document (already converted) to the buffers.
  void Emit(const int32_t* ids, size_t count, size_t doc_offset);
  size_t fill() const { return tokens_.size() - ready_ * options_.seq_len; }

  PackingOptions options_;
  // Ready sequences followed by the one being filled, flat, seq_len apart.
  std::vector<int32_t> tokens_, segments_, positions_;
  std::vector<std::pair<uint64_t, size_t>> starts_;  // per buffered sequence: ResumePoint
  std::vector<int32_t> scratch_;                     // one document converted to int32
  size_t ready_ = 0;
  int32_t segment_ = 0;     // segment id of the current document in the filling sequence
  uint64_t documents_ = 0;  // Add calls so far
  bool finished_ = false;
};

extern template Status SequencePacker::Add(std::span<const int32_t>, size_t);
extern template Status SequencePacker::Add(std::span<const int64_t>, size_t);
extern template Status SequencePacker::Add(std::span<const uint16_t>, size_t);
extern template Status SequencePacker::Add(std::span<const uint32_t>, size_t);

// Packs all of `docs` (then Finish) into *out: the one-shot form of SequencePacker.
template <TokenId T>
Status PackDocuments(std::span<const std::span<const T>> docs, const PackingOptions& options,
                     PackedBatch* out) {
  SLUICE_ASSIGN_OR_RETURN(SequencePacker packer, SequencePacker::Create(options));
  for (const auto& d : docs) SLUICE_RETURN_IF_ERROR(packer.Add(d));
  packer.Finish();
  packer.Take(packer.ready(), out);
  return Status::OK();
}

}  // namespace sluice::text

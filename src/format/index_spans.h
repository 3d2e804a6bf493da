// The sparse directory of one table of an index file (IndexDirectory, index_directory.cc):
// its checkpoints, one per span of blocks, each with the decoder state before the span and
// the span's CRC at open (docs/format.md, "How the reader uses the index").
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "format/index_block_cache.h"
#include "format/index_directory.h"
#include "format/index_stream.h"
#include "format/index_table.h"
#include "sluice/base/bytes.h"

namespace sluice::format::index_spans {

inline constexpr uint64_t K = kIndexBlockEntries;  // entries per block

// The decoder state of a table before one span of blocks, and where the span starts in the
// index file. Span s of a table covers its blocks [s * span, (s + 1) * span), i.e. the bytes
// [checkpoints[s].position, checkpoints[s + 1].position); the last checkpoint is a sentinel at
// the table's end. `crc` is the CRC32C of the span's bytes at open, so that a later read can
// tell whether they are still the same.
struct Checkpoint {
  uint64_t position = 0;
  uint64_t end = 0;    // FrameCursor::end, or RecordCursor::end_in_frame
  uint32_t frame = 0;  // RecordCursor::frame (0 in the frame table)
  uint32_t crc = 0;
};

inline Checkpoint CheckpointAt(const FrameCursor& c) { return Checkpoint{0, c.end, 0, 0}; }
inline Checkpoint CheckpointAt(const RecordCursor& c) {
  return Checkpoint{0, c.end_in_frame, static_cast<uint32_t>(c.frame), 0};
}
inline void ResumeAt(const Checkpoint& cp, FrameCursor* c) { c->end = cp.end; }
inline void ResumeAt(const Checkpoint& cp, RecordCursor* c) { *c = RecordCursor{cp.frame, cp.end}; }

// A block derived by walking a span is cached with the decoder state before it in front of
// its bytes (a Checkpoint's end and frame).
inline constexpr size_t kStatePrefixBytes = 12;
inline void PutStatePrefix(const Checkpoint& state, std::string* dst) {
  dst->resize(kStatePrefixBytes);
  EncodeFixed64(dst->data(), state.end);
  EncodeFixed32(dst->data() + 8, state.frame);
}

// Blocks per checkpoint for a table of `entries` entries: the smallest power of two that
// keeps its checkpoints (and the sentinel) within `budget_bytes`, or one span for the table.
inline uint64_t SpanFor(uint64_t entries, uint64_t budget_bytes) {
  const uint64_t blocks = (entries + K - 1) / K;
  uint64_t span = 1;
  while (span < blocks && ((blocks + span - 1) / span + 1) * sizeof(Checkpoint) > budget_bytes) {
    span *= 2;
  }
  return span;
}

// One table of the index as the directory knows it.
struct Table {
  const char* name;  // "frame" or "record", for errors
  uint64_t entries = 0;
  uint64_t span = 1;  // blocks per checkpoint, a power of two
  std::vector<Checkpoint> checkpoints;
  const uint64_t id = IndexBlockCache::NewTableId();

  explicit Table(const char* table_name) : name(table_name) {}
  uint64_t BlocksIn(uint64_t s) const { return std::min(span, (entries + K - 1) / K - s * span); }
};

// Starts a span at `in`'s position when entry i begins one, sealing the previous span with
// its CRC.
template <typename Cursor>
void MaybeStartSpan(Table* table, IndexStream* in, uint64_t i, const Cursor& cursor) {
  static_assert((K & (K - 1)) == 0);
  if ((i & (K * table->span - 1)) != 0) return;  // K and span are powers of two: no division
  if (!table->checkpoints.empty()) table->checkpoints.back().crc = in->TakeCrc();
  Checkpoint next = CheckpointAt(cursor);
  next.position = in->position();
  table->checkpoints.push_back(next);
}
inline void EndTable(Table* table, IndexStream* in) {
  if (!table->checkpoints.empty()) table->checkpoints.back().crc = in->TakeCrc();
  table->checkpoints.push_back(Checkpoint{in->position(), 0, 0, 0});
}

}  // namespace sluice::format::index_spans

// Chunks of a shard: runs of consecutive index frames that are fetched and decoded as one
// unit. They are what the chunk-aware order permutes and what the pipeline's decoded-chunk
// cache holds (docs/order.md, "Chunks"), so that a shuffled read decodes each frame once
// per window instead of once per record. The table is cut from the shard's index at open
// (a pure function of the index), so every reader of a snapshot sees the same chunks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/format/shard_index.h"

namespace sluice::format {

struct RealignedIndex;  // format/index_realign.h: a shard's index re-built while reading

// Decoded bytes a chunk holds at most, unless one frame alone is larger (it is then a chunk
// of its own): sluice's zstd frames are ~1 MiB, so they are one chunk each; an uncompressed
// shard (one frame per record) gets runs of records of up to 1 MiB; a gzip shard (one frame,
// the whole file: deflate has no restart points) is one chunk. Part of the order's
// definition: changing it changes every chunk-mode order.
inline constexpr uint64_t kChunkTargetBytes = uint64_t{1} << 20;

struct ShardChunk {
  uint64_t first_record = 0;   // index in the shard of the chunk's first record
  uint64_t records = 0;        // >= 1: frames without records belong to no chunk
  uint64_t file_offset = 0;    // the bytes to fetch: [file_offset, file_offset + file_bytes)
  uint64_t file_bytes = 0;     //   of the shard file (its frames are contiguous there)
  uint64_t decoded_bytes = 0;  // what it takes once decoded (sum of its frames' sizes)
  uint32_t first_frame = 0;    // its index frames: [first_frame, first_frame + frames)
  uint32_t frames = 0;
};

// A chunk's bytes once decoded, and where each of its frames and records starts in them.
struct DecodedChunk {
  std::string bytes;
  // Compressed codecs: decoded offset of frame first_frame + i. Empty for codec none, whose
  // decoded bytes are the file bytes (a record's offset follows from its file offset).
  std::vector<uint64_t> frame_starts;
  // ShardReader::DecodeChunk locates every record of the chunk as it decodes it (the index
  // walked once, in order) and keeps, for record first_record + j, the offset of its framed
  // bytes and the length the index gives it, or kRecordFailedCheck where the index does not
  // place the record inside the chunk. A read checks its record there (header, length
  // against the index, payload CRC: the first batch after a start waits for the checks of
  // its own records only) and, when that fails, locates it again through the index and
  // reports what is wrong. Empty: not located (each read locates its record). Offset and
  // length side by side: a read in shuffled order touches one cache line of this table.
  struct Located {
    uint32_t offset;
    uint32_t length;
    // Where the framed record's last byte lies (its payload CRC, which a read checks): past
    // the payload by its framing (length, length CRC before; payload CRC after).
    uint64_t last_byte() const { return uint64_t{offset} + length + kFramingBytes - 1; }
    static constexpr uint32_t kFramingBytes = 16;
  };
  std::vector<Located> records;
  // Set by ShardReader::DecodeChunk when it located the records: its reader's re-indexed
  // index, as the reader publishes it (null until a read re-indexes the shard under
  // ShardDamagePolicy::kRecover), and its verify_crc option. IntactRecordInChunk serves reads
  // from such a chunk while that reader is not re-indexed. Unset (null): reads go through
  // the reader.
  std::shared_ptr<const std::atomic<const RealignedIndex*>> reindexed;
  bool verify_crc = true;
  // A buffer DecodeChunk is done with, for the caller to reuse: the fetched bytes once
  // decompressed, or (codec none, whose fetched bytes become `bytes`) what `bytes` held.
  std::string spare;
  uint64_t memory_bytes() const {
    return bytes.capacity() + frame_starts.capacity() * sizeof(uint64_t) +
           records.capacity() * sizeof(Located);
  }
};
inline constexpr uint32_t kRecordFailedCheck = UINT32_MAX;

// Record first_record + j of a chunk that ShardReader::DecodeChunk decoded, straight from
// the chunk: true with its payload in *record when the decode located it (`reindexed`
// set), it passes the reader's checks there (header, length against the index, CRCs as the
// reader's verify_crc says) and the reader is not re-indexed (a re-indexed reader may serve
// the record from elsewhere): the test RecordInChunk makes. false: read it through the
// reader (RecordInChunk), which says what is wrong. The same bytes RecordInChunk returns, a
// plain call instead of two virtual ones (a shuffled read of small records makes one per
// record: ~10% of its CPU).
bool IntactRecordInChunk(const DecodedChunk& decoded, uint64_t j, ByteView* record);

// Cuts a shard's index into chunks, fed the index's records in order with their frames.
// Rule (docs/order.md, "Chunks"): a record in the same frame as the previous one joins its
// chunk; a record in the next frame joins it too when that frame starts where the chunk ends
// in the file and the chunk's decoded bytes stay within `target_bytes`; otherwise the record
// starts a new chunk with its frame.
class ChunkTableBuilder {
 public:
  explicit ChunkTableBuilder(uint64_t target_bytes = kChunkTargetBytes)
      : target_bytes_(target_bytes) {}
  // Record `i` (0, 1, ... in order) lies in frame `frame_index`, described by `frame`.
  // Inline: an index scan at open adds every record.
  void AddRecord(uint64_t i, uint64_t frame_index, const IndexFrame& frame) {
    if (!chunks_.empty()) {
      ShardChunk& c = chunks_.back();
      if (frame_index == last_frame_) {
        ++c.records;
        return;
      }
      const bool next_and_adjacent = frame_index == last_frame_ + 1 &&
                                     frame.file_offset == c.file_offset + c.file_bytes &&
                                     c.decoded_bytes + frame.uncompressed_bytes <= target_bytes_;
      if (next_and_adjacent) {
        ++c.records;
        c.file_bytes += frame.file_bytes;
        c.decoded_bytes += frame.uncompressed_bytes;
        ++c.frames;
        last_frame_ = frame_index;
        return;
      }
    }
    StartChunk(i, frame_index, frame);
  }
  std::vector<ShardChunk> Finish() { return std::move(chunks_); }

 private:
  void StartChunk(uint64_t i, uint64_t frame_index, const IndexFrame& frame);

  const uint64_t target_bytes_;
  std::vector<ShardChunk> chunks_;
  uint64_t last_frame_ = 0;
};

// The chunk table of a whole in-memory index (the same rule).
std::vector<ShardChunk> ChunkTableOf(const ShardIndex& index,
                                     uint64_t target_bytes = kChunkTargetBytes);

}  // namespace sluice::format

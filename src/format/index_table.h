// The tables of the index file "<shard>.idx" (docs/format.md, section 4), one entry at a
// time: encoding, decoding with the format's validation, and the delta-decoding state a
// decoder carries from entry to entry. Shared by the eager ShardIndex (whole tables) and the
// lazy IndexDirectory (blocks of entries resumed from a checkpoint).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/framing.h"
#include "sluice/base/bytes.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {

inline constexpr std::string_view kIndexMagic = "SLUICEIX";
inline constexpr uint32_t kIndexVersion = 1;
// magic, version, codec, num_frames, num_records
inline constexpr size_t kIndexHeaderBytes = 32;
inline constexpr size_t kIndexCrcBytes = 4;
inline constexpr size_t kMinEntryBytes = 3;   // three varints of at least one byte
inline constexpr size_t kMaxEntryBytes = 30;  // three varints of at most ten bytes

void PutVarint64(std::string* dst, uint64_t v);
bool GetVarint64Slow(ByteView* in, uint64_t* v);
// Decodes one LEB128 varint from the front of *in. False when malformed, truncated or over
// 64 bits. Inline, with the one- and two-byte cases first: decoding index blocks is the
// lazy reader's hot loop (and, with the decoders below, always inlined: an index scan at open
// decodes every entry, and through a call the compiler keeps the cursor and view in memory).
[[gnu::always_inline]] inline bool GetVarint64(ByteView* in, uint64_t* v) {
  if (in->size() >= 2) {
    const uint64_t b0 = static_cast<uint8_t>((*in)[0]);
    if (b0 < 0x80) {
      *v = b0;
      in->remove_prefix(1);
      return true;
    }
    const uint64_t b1 = static_cast<uint8_t>((*in)[1]);
    if (b1 < 0x80) {
      *v = (b0 & 0x7F) | (b1 << 7);
      in->remove_prefix(2);
      return true;
    }
  }
  return GetVarint64Slow(in, v);
}

// The fixed header, parsed and validated against the index file's size.
struct IndexHeader {
  Codec codec = Codec::kNone;
  uint64_t num_frames = 0;
  uint64_t num_records = 0;
};
// `head`: the first kIndexHeaderBytes of a file of `file_bytes` bytes whose CRC has been
// checked already. Errors: "<source>: corrupt index: ..." as docs/format.md lists them.
Result<IndexHeader> ParseIndexHeader(ByteView head, uint64_t file_bytes, const std::string& source);
// Checks the size and magic of a file, before its CRC is computed.
Status CheckIndexFraming(ByteView head, uint64_t file_bytes, const std::string& source);

// Delta-decoding state of the frame table: where the previous frame ends in the shard.
struct FrameCursor {
  uint64_t end = 0;
};
// Delta-decoding state of the record table: the previous record's frame and where it ends
// inside that frame.
struct RecordCursor {
  uint64_t frame = 0;
  uint64_t end_in_frame = 0;
};

// Why an entry was rejected; nullptr when it was accepted. The texts are the ones of
// docs/format.md's validation list.
using EntryFault = const char*;

// Decodes the frame entry at the front of *in, advancing *in and *cursor.
[[gnu::always_inline]] inline EntryFault DecodeFrameEntry(ByteView* in, FrameCursor* cursor,
                                                          IndexFrame* frame) {
  uint64_t gap, file_bytes, uncompressed;
  if (!GetVarint64(in, &gap) || !GetVarint64(in, &file_bytes) || !GetVarint64(in, &uncompressed)) {
    return "frame table";
  }
  *frame = IndexFrame{0, file_bytes, uncompressed};
  if (__builtin_add_overflow(cursor->end, gap, &frame->file_offset) ||
      __builtin_add_overflow(frame->file_offset, file_bytes, &cursor->end)) {
    return "frame table (offset overflow)";
  }
  return nullptr;
}

// Decodes the record entry at the front of *in, advancing *in and *cursor. Checks that its
// frame is below `num_frames`; the caller checks that the record ends within its frame
// (cursor->end_in_frame <= the frame's uncompressed_bytes), see RecordFitsFrame.
[[gnu::always_inline]] inline EntryFault DecodeRecordEntry(ByteView* in, uint64_t num_frames,
                                                           RecordCursor* cursor,
                                                           IndexRecord* record) {
  uint64_t delta, gap, length;
  if (!GetVarint64(in, &delta) || !GetVarint64(in, &gap) || !GetVarint64(in, &length)) {
    return "record table";
  }
  if (delta > 0) cursor->end_in_frame = 0;
  if (__builtin_add_overflow(cursor->frame, delta, &cursor->frame) || cursor->frame >= num_frames ||
      cursor->frame > UINT32_MAX) {
    return "record table (frame out of range)";
  }
  *record = IndexRecord{static_cast<uint32_t>(cursor->frame), 0, length};
  uint64_t framed;
  if (__builtin_add_overflow(cursor->end_in_frame, gap, &record->offset_in_frame) ||
      __builtin_add_overflow(length, kRecordOverheadBytes, &framed) ||
      __builtin_add_overflow(record->offset_in_frame, framed, &cursor->end_in_frame)) {
    return "record table (record outside its frame)";
  }
  return nullptr;
}
inline EntryFault RecordFitsFrame(const RecordCursor& cursor, const IndexFrame& frame) {
  return cursor.end_in_frame <= frame.uncompressed_bytes
             ? nullptr
             : "record table (record outside its frame)";
}

// "<source>: corrupt index: bad entry <i> in <fault>".
Status BadEntry(const std::string& source, uint64_t i, EntryFault fault);

}  // namespace sluice::format

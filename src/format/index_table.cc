#include "format/index_table.h"

#include "format/framing.h"

namespace sluice::format {
namespace {

bool AddOverflows(uint64_t a, uint64_t b, uint64_t* sum) {
  return __builtin_add_overflow(a, b, sum);
}

Status Corrupt(const std::string& source, const std::string& why) {
  return DataLoss(source + ": corrupt index: " + why);
}

}  // namespace

void PutVarint64(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}

bool GetVarint64(ByteView* in, uint64_t* v) {
  if (!in->empty() && static_cast<uint8_t>(in->front()) < 0x80) {  // the common one-byte case
    *v = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    return true;
  }
  uint64_t result = 0;
  for (unsigned shift = 0; shift < 64 && !in->empty(); shift += 7) {
    uint64_t byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    if (shift == 63 && byte > 1) return false;  // would overflow 64 bits
    result |= (byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

Status CheckIndexFraming(ByteView head, uint64_t file_bytes, const std::string& source) {
  if (file_bytes < kIndexHeaderBytes + kIndexCrcBytes) {
    return Corrupt(source, "too short (" + std::to_string(file_bytes) + " bytes)");
  }
  if (head.substr(0, kIndexMagic.size()) != kIndexMagic) {
    return Corrupt(source, "bad magic (not a sluice index)");
  }
  return Status::OK();
}

Result<IndexHeader> ParseIndexHeader(ByteView head, uint64_t file_bytes,
                                     const std::string& source) {
  uint32_t version = DecodeFixed32(head.data() + 8);
  if (version != kIndexVersion) {
    return Corrupt(source, "unsupported version " + std::to_string(version) +
                               " (this reader knows " + std::to_string(kIndexVersion) + ")");
  }
  uint32_t codec = DecodeFixed32(head.data() + 12);
  if (codec > static_cast<uint32_t>(Codec::kZstd)) {
    return Corrupt(source, "unknown codec " + std::to_string(codec));
  }
  IndexHeader h{static_cast<Codec>(codec), DecodeFixed64(head.data() + 16),
                DecodeFixed64(head.data() + 24)};
  // Bound the counts by the bytes present before anyone allocates for them.
  uint64_t table_bytes = file_bytes - kIndexHeaderBytes - kIndexCrcBytes;
  if (h.num_frames > table_bytes / kMinEntryBytes ||
      h.num_records > table_bytes / kMinEntryBytes - h.num_frames) {
    return Corrupt(source, "counts (" + std::to_string(h.num_frames) + " frames, " +
                               std::to_string(h.num_records) + " records) exceed the index size");
  }
  return h;
}

EntryFault DecodeFrameEntry(ByteView* in, FrameCursor* cursor, IndexFrame* frame) {
  uint64_t gap, file_bytes, uncompressed;
  if (!GetVarint64(in, &gap) || !GetVarint64(in, &file_bytes) ||
      !GetVarint64(in, &uncompressed)) {
    return "frame table";
  }
  *frame = IndexFrame{0, file_bytes, uncompressed};
  if (AddOverflows(cursor->end, gap, &frame->file_offset) ||
      AddOverflows(frame->file_offset, file_bytes, &cursor->end)) {
    return "frame table (offset overflow)";
  }
  return nullptr;
}

EntryFault DecodeRecordEntry(ByteView* in, uint64_t num_frames, RecordCursor* cursor,
                             IndexRecord* record) {
  uint64_t delta, gap, length;
  if (!GetVarint64(in, &delta) || !GetVarint64(in, &gap) || !GetVarint64(in, &length)) {
    return "record table";
  }
  if (delta > 0) cursor->end_in_frame = 0;
  if (AddOverflows(cursor->frame, delta, &cursor->frame) || cursor->frame >= num_frames ||
      cursor->frame > UINT32_MAX) {
    return "record table (frame out of range)";
  }
  *record = IndexRecord{static_cast<uint32_t>(cursor->frame), 0, length};
  uint64_t framed;
  if (AddOverflows(cursor->end_in_frame, gap, &record->offset_in_frame) ||
      AddOverflows(length, kRecordOverheadBytes, &framed) ||
      AddOverflows(record->offset_in_frame, framed, &cursor->end_in_frame)) {
    return "record table (record outside its frame)";
  }
  return nullptr;
}

Status BadEntry(const std::string& source, uint64_t i, EntryFault fault) {
  return Corrupt(source, "bad entry " + std::to_string(i) + " in " + fault);
}

}  // namespace sluice::format

#include "format/index_table.h"

namespace sluice::format {
namespace {

Status Corrupt(const std::string& source, const std::string& why) {
  return DataLoss(source + ": corrupt index: " + why);
}

}  // namespace

bool GetVarint64Slow(ByteView* in, uint64_t* v) {
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

void PutVarint64(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
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

Status BadEntry(const std::string& source, uint64_t i, EntryFault fault) {
  return Corrupt(source, "bad entry " + std::to_string(i) + " in " + fault);
}

}  // namespace sluice::format

// ShardReaderImpl's chunk path (shard_chunks.h): a chunk's records located once as it is
// decoded, then looked up and checked as they are read; under kRecover a chunk or record
// the index misplaces re-indexes the shard (ShardReader::Read says how positions are then
// served).
#include <atomic>

#include "format/chunk_decode.h"
#include "format/framing.h"
#include "format/shard_reader_impl.h"

namespace sluice::format {
namespace {

// Where record r of the frame at file offset `frame_offset` starts in the decoded chunk;
// false when the index places it outside. `uncompressed`: codec none, whose decoded bytes
// are the file's.
[[gnu::always_inline]] inline bool OffsetInChunk(bool uncompressed, const IndexRecord& r,
                                                 uint64_t frame_offset, const ShardChunk& chunk,
                                                 const DecodedChunk& decoded, uint64_t* begin) {
  const uint64_t frame = r.frame - chunk.first_frame;
  if (r.frame < chunk.first_frame || frame >= chunk.frames) return false;
  *begin = r.offset_in_frame;
  if (uncompressed) {
    *begin += frame_offset - chunk.file_offset;
  } else if (frame < decoded.frame_starts.size()) {
    *begin += decoded.frame_starts[frame];
  } else {
    return false;
  }
  return *begin + r.length + kRecordOverheadBytes <= decoded.bytes.size();
}

static_assert(DecodedChunk::Located::kFramingBytes == kRecordOverheadBytes);

// The framed record j of `decoded` when the decode located it and it passes the checks
// there, else null (ShardReaderImpl::LocatedIntact, IntactRecordInChunk).
[[gnu::always_inline]] inline const char* Intact(const DecodedChunk& decoded, uint64_t j,
                                                 bool verify_crc) {
  if (j >= decoded.records.size()) return nullptr;
  const DecodedChunk::Located located = decoded.records[j];
  if (located.offset == kRecordFailedCheck) return nullptr;
  const char* framed = decoded.bytes.data() + located.offset;
  HeaderCheck header = HeaderCheck::kOk;
  uint64_t length = 0;
  // In bounds: DecodeChunk placed the record's framing, of the index's length, in the chunk.
  return CheckFramedRecord(framed, located.length, verify_crc, &header, &length) ==
                 FramedFault::kNone
             ? framed
             : nullptr;
}

// Entries (32 bytes each) a thread keeps allocated between chunk decodes: a 1 MiB chunk of
// records of 64 bytes or more.
constexpr size_t kKeptEntries = size_t{1} << 14;

}  // namespace

bool IntactRecordInChunk(const DecodedChunk& decoded, uint64_t j, ByteView* record) {
  if (decoded.reindexed == nullptr ||
      decoded.reindexed->load(std::memory_order_acquire) != nullptr) {
    return false;
  }
  const char* framed = Intact(decoded, j, decoded.verify_crc);
  if (framed == nullptr) return false;
  *record = ByteView(framed + kRecordHeaderBytes, decoded.records[j].length);
  return true;
}

Status ShardReaderImpl::DecodeChunk(const ShardChunk& chunk, std::string fetched,
                                    DecodedChunk* out) const {
  out->reindexed = nullptr;
  std::vector<IndexFrame> frames;
  if (codec() != Codec::kNone) {
    frames.resize(chunk.frames);
    for (uint32_t j = 0; j < chunk.frames; ++j) {
      SLUICE_RETURN_IF_ERROR(index_->Frame(uint64_t{chunk.first_frame} + j, &frames[j]));
    }
  }
  Status decoded = DecodeChunkFrames(codec(), path(), chunk, frames, std::move(fetched),
                                      /*frame_checksums=*/!options_.verify_crc, out);
  out->records.clear();
  if (!decoded.ok()) {
    // Frames the index places where none decodes: under kRecover the shard is re-indexed and
    // every record of the chunk is read through the realigned index (RecordInChunk).
    if (!Realigns(decoded, true)) return decoded;
    SLUICE_RETURN_IF_ERROR(Realign(decoded).status());
    out->bytes.clear();
    out->frame_starts.clear();
    out->records.assign(chunk.records, {kRecordFailedCheck, 0});
    return Status::OK();
  }
  // Locates every record now, in index order (the index's lookups in order are cheap), so
  // that reading one later is a lookup and a check of its own bytes.
  if (out->bytes.size() >= kRecordFailedCheck) return Status::OK();  // reads locate instead
  // A record the index places outside the chunk is marked, and so are those from an index
  // entry that cannot be read (or a chunk beyond the index) on, whose walk error is dropped:
  // a later read of such a record locates and checks it again and reports what is wrong
  // (and, when the index does not frame a record there, re-indexes the shard under kRecover).
  // The walk is in bulk (LocateRangeInto), then one tight loop: a chunk has thousands of
  // small records, and restoring an iterator locates a whole window's.
  const bool uncompressed = codec() == Codec::kNone;
  thread_local std::vector<IndexLookup::RangeEntry> entries;
  (void)index_->LocateRangeInto(chunk.first_record, chunk.records, &entries);
  out->records.assign(chunk.records, {kRecordFailedCheck, 0});
  DecodedChunk::Located* located = out->records.data();
  for (size_t k = 0; k < entries.size(); ++k) {  // entries.size() <= chunk.records
    const IndexRecord& r = entries[k].record;
    uint64_t begin = 0;
    if (r.length < kRecordFailedCheck &&
        OffsetInChunk(uncompressed, r, entries[k].frame_file_offset, chunk, *out, &begin)) {
      located[k] = {static_cast<uint32_t>(begin), static_cast<uint32_t>(r.length)};
    }
  }
  if (entries.capacity() > kKeptEntries) std::vector<IndexLookup::RangeEntry>().swap(entries);
  out->verify_crc = options_.verify_crc;
  out->reindexed = realigned_active_;
  return Status::OK();
}

const char* ShardReaderImpl::LocatedIntact(const DecodedChunk& decoded, uint64_t j) const {
  return Intact(decoded, j, options_.verify_crc);
}

Result<ByteView> ShardReaderImpl::RecordInChunk(uint64_t i, const ShardChunk& chunk,
                                                const DecodedChunk& decoded,
                                                std::string* scratch) const {
  if (i < chunk.first_record || i - chunk.first_record >= chunk.records) {
    return Internal(path() + ": record " + std::to_string(i) +
                    " is not in the chunk at file offset " + std::to_string(chunk.file_offset));
  }
  const char* intact = LocatedIntact(decoded, i - chunk.first_record);
  const RealignedIndex* realigned = this->realigned();
  if (realigned == nullptr) {
    if (intact != nullptr) return ByteView(intact + kRecordHeaderBytes, DecodeFixed64(intact));
    IndexRecord r;
    IndexFrame f;
    SLUICE_RETURN_IF_ERROR(Locate(i, &r, &f));
    uint64_t begin = 0;
    bool misplaced = false;
    Status s;
    if (!OffsetInChunk(codec() == Codec::kNone, r, f.file_offset, chunk, decoded, &begin)) {
      misplaced = true;
      s = DataLoss(Where(i, r, f) + ": the index places the record outside its chunk");
    } else {
      s = CheckRecord(i, r, f, decoded.bytes.data() + begin, &misplaced);
      if (s.ok()) return ByteView(decoded.bytes.data() + begin + kRecordHeaderBytes, r.length);
    }
    if (!Realigns(s, misplaced)) return s;
    SLUICE_ASSIGN_OR_RETURN(realigned, Realign(s));
  }
  // Re-indexed: a record the chunk checked where the realigned index places it too is served
  // from the chunk; one that moved is read where the data holds it.
  const uint64_t record = realigned->map[i];
  if (record == kPositionLost) return LostError(*realigned, i);
  if (intact != nullptr && (record & kRecordMoved) == 0) {
    return ByteView(intact + kRecordHeaderBytes, DecodeFixed64(intact));
  }
  SLUICE_RETURN_IF_ERROR(ReadRealigned(*realigned, i, scratch));
  return ByteView(*scratch);
}

}  // namespace sluice::format

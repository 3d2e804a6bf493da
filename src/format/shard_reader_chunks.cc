// ShardReaderImpl's chunk path (shard_chunks.h): a chunk's records checked once as it is
// decoded, then looked up; under kRecover a chunk or record the index misplaces re-indexes
// the shard (ShardReader::Read says how positions are then served).
#include "format/chunk_decode.h"
#include "format/framing.h"
#include "format/shard_reader_impl.h"

namespace sluice::format {

Status ShardReaderImpl::DecodeChunk(const ShardChunk& chunk, std::string fetched,
                                    DecodedChunk* out) const {
  std::vector<IndexFrame> frames;
  if (codec() != Codec::kNone) {
    frames.resize(chunk.frames);
    for (uint32_t j = 0; j < chunk.frames; ++j) {
      SLUICE_RETURN_IF_ERROR(index_->Frame(uint64_t{chunk.first_frame} + j, &frames[j]));
    }
  }
  Status decoded = DecodeChunkFrames(codec(), path(), chunk, frames, std::move(fetched), out);
  out->record_offsets.clear();
  if (!decoded.ok()) {
    // Frames the index places where none decodes: under kRecover the shard is re-indexed and
    // every record of the chunk is read through the realigned index (RecordInChunk).
    if (!Realigns(decoded, true)) return decoded;
    SLUICE_RETURN_IF_ERROR(Realign(decoded).status());
    out->bytes.clear();
    out->frame_starts.clear();
    out->record_offsets.assign(chunk.records, kRecordFailedCheck);
    return Status::OK();
  }
  // Checks every record now, in index order (the index's lookups in order are cheap), so
  // that reading one later is a lookup: the CRC work moves to the decoding thread.
  if (out->bytes.size() >= kRecordFailedCheck) return Status::OK();  // reads check instead
  out->record_offsets.reserve(chunk.records);
  // A record that fails is marked, and so are those from an index entry that cannot be read
  // (or a chunk beyond the index) on, whose walk error is dropped: a later read of such a
  // record locates and checks it again and reports what is wrong (and, when the index does
  // not frame a record there, re-indexes the shard under kRecover).
  (void)index_->LocateRange(
      chunk.first_record, chunk.records,
      [&](uint64_t i, const IndexRecord& r, const IndexFrame& f) {
        uint64_t begin = 0;
        const bool ok = RecordOffsetInChunk(r, f, chunk, *out, &begin) &&
                        CheckRecord(i, r, f, out->bytes.data() + begin).ok();
        out->record_offsets.push_back(ok ? static_cast<uint32_t>(begin) : kRecordFailedCheck);
      });
  out->record_offsets.resize(chunk.records, kRecordFailedCheck);
  return Status::OK();
}

bool ShardReaderImpl::RecordOffsetInChunk(const IndexRecord& r, const IndexFrame& f,
                                          const ShardChunk& chunk, const DecodedChunk& decoded,
                                          uint64_t* begin) const {
  const uint64_t frame = r.frame;
  if (frame < chunk.first_frame || frame - chunk.first_frame >= chunk.frames) return false;
  *begin = r.offset_in_frame;
  if (codec() == Codec::kNone) {
    *begin += f.file_offset - chunk.file_offset;
  } else if (frame - chunk.first_frame < decoded.frame_starts.size()) {
    *begin += decoded.frame_starts[frame - chunk.first_frame];
  } else {
    return false;
  }
  return *begin + r.length + kRecordOverheadBytes <= decoded.bytes.size();
}

Result<ByteView> ShardReaderImpl::RecordInChunk(uint64_t i, const ShardChunk& chunk,
                                                const DecodedChunk& decoded,
                                                std::string* scratch) const {
  if (i < chunk.first_record || i - chunk.first_record >= chunk.records) {
    return Internal(path() + ": record " + std::to_string(i) +
                    " is not in the chunk at file offset " + std::to_string(chunk.file_offset));
  }
  const uint64_t j = i - chunk.first_record;
  const bool checked =
      j < decoded.record_offsets.size() && decoded.record_offsets[j] != kRecordFailedCheck;
  const RealignedIndex* realigned = this->realigned();
  if (realigned == nullptr) {
    if (checked) {
      const char* framed = decoded.bytes.data() + decoded.record_offsets[j];
      return ByteView(framed + kRecordHeaderBytes, DecodeFixed64(framed));  // checked at decode
    }
    IndexRecord r;
    IndexFrame f;
    SLUICE_RETURN_IF_ERROR(Locate(i, &r, &f));
    uint64_t begin = 0;
    bool misplaced = false;
    Status s;
    if (!RecordOffsetInChunk(r, f, chunk, decoded, &begin)) {
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
  if (checked && (record & kRecordMoved) == 0) {
    const char* framed = decoded.bytes.data() + decoded.record_offsets[j];
    return ByteView(framed + kRecordHeaderBytes, DecodeFixed64(framed));
  }
  SLUICE_RETURN_IF_ERROR(ReadRealigned(*realigned, i, scratch));
  return ByteView(*scratch);
}

}  // namespace sluice::format

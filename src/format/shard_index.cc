// ShardIndex: the "<shard>.idx" file (layout: docs/format.md, "The index file") and Build.
#include "sluice/format/shard_index.h"

#include <algorithm>

#include "format/framing.h"
#include "format/record_stream.h"
#include "sluice/base/crc32c.h"

namespace sluice::format {
namespace {

constexpr std::string_view kIndexMagic = "SLUICEIX";
constexpr uint32_t kIndexVersion = 1;
constexpr size_t kFixedHeaderBytes = 32;  // magic, version, codec, num_frames, num_records
constexpr size_t kMinEntryBytes = 3;      // every frame and record entry is three varints

void PutVarint64(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}

bool GetVarint64(ByteView* in, uint64_t* v) {
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

bool AddOverflows(uint64_t a, uint64_t b, uint64_t* sum) {
  return __builtin_add_overflow(a, b, sum);
}

// Parses the frame and record tables (everything between the fixed header and the CRC).
class TableParser {
 public:
  TableParser(ByteView body, const std::string& source) : in_(body), source_(source) {}

  Status Frames(uint64_t count, std::vector<IndexFrame>* frames) {
    uint64_t end = 0;  // where the previous frame ends in the shard
    frames->reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t gap, file_bytes, uncompressed;
      if (!Varints(&gap, &file_bytes, &uncompressed)) return Bad("frame table", i);
      IndexFrame f{0, file_bytes, uncompressed};
      if (AddOverflows(end, gap, &f.file_offset) || AddOverflows(f.file_offset, file_bytes, &end)) {
        return Bad("frame table (offset overflow)", i);
      }
      frames->push_back(f);
    }
    return Status::OK();
  }

  Status Records(uint64_t count, const std::vector<IndexFrame>& frames,
                 std::vector<IndexRecord>* records) {
    uint64_t frame = 0;
    uint64_t end_in_frame = 0;  // where the previous record of this frame ends
    records->reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t delta, gap, length;
      if (!Varints(&delta, &gap, &length)) return Bad("record table", i);
      if (delta > 0) end_in_frame = 0;
      if (AddOverflows(frame, delta, &frame) || frame >= frames.size() || frame > UINT32_MAX) {
        return Bad("record table (frame out of range)", i);
      }
      IndexRecord r{static_cast<uint32_t>(frame), 0, length};
      uint64_t framed;
      if (AddOverflows(end_in_frame, gap, &r.offset_in_frame) ||
          AddOverflows(length, kRecordOverheadBytes, &framed) ||
          AddOverflows(r.offset_in_frame, framed, &end_in_frame) ||
          end_in_frame > frames[frame].uncompressed_bytes) {
        return Bad("record table (record outside its frame)", i);
      }
      records->push_back(r);
    }
    if (!in_.empty()) {
      return DataLoss(source_ + ": corrupt index: " + std::to_string(in_.size()) +
                      " unexpected bytes after the record table");
    }
    return Status::OK();
  }

 private:
  bool Varints(uint64_t* a, uint64_t* b, uint64_t* c) {
    return GetVarint64(&in_, a) && GetVarint64(&in_, b) && GetVarint64(&in_, c);
  }
  Status Bad(const char* what, uint64_t i) const {
    return DataLoss(source_ + ": corrupt index: bad entry " + std::to_string(i) + " in " + what);
  }

  ByteView in_;
  const std::string& source_;
};

}  // namespace

std::string ShardIndex::Serialize() const {
  std::string out(kIndexMagic);
  PutFixed32(&out, kIndexVersion);
  PutFixed32(&out, static_cast<uint32_t>(codec_));
  PutFixed64(&out, frames_.size());
  PutFixed64(&out, records_.size());
  uint64_t end = 0;
  for (const IndexFrame& f : frames_) {
    PutVarint64(&out, f.file_offset - end);
    PutVarint64(&out, f.file_bytes);
    PutVarint64(&out, f.uncompressed_bytes);
    end = f.file_offset + f.file_bytes;
  }
  uint64_t frame = 0;
  uint64_t end_in_frame = 0;
  for (const IndexRecord& r : records_) {
    if (r.frame != frame) end_in_frame = 0;
    PutVarint64(&out, r.frame - frame);
    PutVarint64(&out, r.offset_in_frame - end_in_frame);
    PutVarint64(&out, r.length);
    frame = r.frame;
    end_in_frame = r.offset_in_frame + r.length + kRecordOverheadBytes;
  }
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  return out;
}

Result<ShardIndex> ShardIndex::Parse(ByteView data, const std::string& source) {
  auto bad = [&](const std::string& why) { return DataLoss(source + ": corrupt index: " + why); };
  if (data.size() < kFixedHeaderBytes + 4)
    return bad("too short (" + std::to_string(data.size()) + " bytes)");
  if (data.substr(0, kIndexMagic.size()) != kIndexMagic)
    return bad("bad magic (not a sluice index)");
  ByteView body = data.substr(0, data.size() - 4);
  if (crc32c::Unmask(DecodeFixed32(data.data() + body.size())) != crc32c::Value(body)) {
    return bad("CRC mismatch");
  }
  uint32_t version = DecodeFixed32(data.data() + 8);
  if (version != kIndexVersion) {
    return bad("unsupported version " + std::to_string(version) + " (this reader knows " +
               std::to_string(kIndexVersion) + ")");
  }
  uint32_t codec = DecodeFixed32(data.data() + 12);
  if (codec > static_cast<uint32_t>(Codec::kZstd))
    return bad("unknown codec " + std::to_string(codec));
  uint64_t num_frames = DecodeFixed64(data.data() + 16);
  uint64_t num_records = DecodeFixed64(data.data() + 24);
  body.remove_prefix(kFixedHeaderBytes);
  // Bound the counts by the bytes present before allocating anything.
  if (num_frames > body.size() / kMinEntryBytes ||
      num_records > body.size() / kMinEntryBytes - num_frames) {
    return bad("counts (" + std::to_string(num_frames) + " frames, " + std::to_string(num_records) +
               " records) exceed the index size");
  }
  std::vector<IndexFrame> frames;
  std::vector<IndexRecord> records;
  TableParser tables(body, source);
  SLUICE_RETURN_IF_ERROR(tables.Frames(num_frames, &frames));
  SLUICE_RETURN_IF_ERROR(tables.Records(num_records, frames, &records));
  return ShardIndex(static_cast<Codec>(codec), std::move(frames), std::move(records));
}

Result<ShardIndex> ShardIndex::Load(io::FileSystem* fs, const std::string& index_path) {
  SLUICE_ASSIGN_OR_RETURN(std::string data, fs->ReadAll(index_path));
  return Parse(data, index_path);
}

Status ShardIndex::Save(io::FileSystem* fs, const std::string& index_path) const {
  return fs->WriteAll(index_path, Serialize());
}

namespace {

struct StreamRecord {
  uint64_t offset;  // in the uncompressed stream
  uint64_t length;
};

// zstd: groups consecutive frames so that no record straddles two groups (sluice's writer
// never splits records, so each frame is its own group; other writers may).
ShardIndex GroupZstdFrames(const std::deque<FrameSpan>& spans,
                           const std::vector<StreamRecord>& recs) {
  // cuttable[j]: a group may end before spans[j] (no record spans that boundary).
  std::vector<bool> cuttable(spans.size() + 1, true);
  for (const StreamRecord& r : recs) {
    uint64_t end = r.offset + r.length + kRecordOverheadBytes;
    auto first =
        std::upper_bound(spans.begin(), spans.end(), r.offset,
                         [](uint64_t o, const FrameSpan& s) { return o < s.stream_offset; });
    for (auto it = first; it != spans.end() && it->stream_offset < end; ++it) {
      cuttable[it - spans.begin()] = false;
    }
  }
  std::vector<IndexFrame> frames;
  std::vector<uint64_t> group_stream_start;
  for (size_t j = 0; j < spans.size(); ++j) {
    if (j == 0 || cuttable[j]) {
      frames.push_back({spans[j].file_offset, 0, 0});
      group_stream_start.push_back(spans[j].stream_offset);
    }
    frames.back().file_bytes += spans[j].file_bytes;
    frames.back().uncompressed_bytes += spans[j].stream_bytes;
  }
  std::vector<IndexRecord> records;
  size_t g = 0;
  for (const StreamRecord& r : recs) {
    while (g + 1 < frames.size() && group_stream_start[g + 1] <= r.offset) ++g;
    records.push_back({static_cast<uint32_t>(g), r.offset - group_stream_start[g], r.length});
  }
  return ShardIndex(Codec::kZstd, std::move(frames), std::move(records));
}

}  // namespace

Result<ShardIndex> ShardIndex::Build(io::FileSystem* fs, const std::string& shard_path) {
  SLUICE_ASSIGN_OR_RETURN(auto reader,
                          RecordStreamReader::Open(fs, shard_path, RecordReaderOptions(),
                                                   /*keep_frames=*/true));
  std::vector<StreamRecord> recs;
  ByteView record;
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    recs.push_back({reader->record_offset(), record.size()});
  }
  SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, fs->Stat(shard_path));
  std::vector<IndexFrame> frames;
  std::vector<IndexRecord> records;
  switch (reader->codec()) {
    case Codec::kNone:
      for (const StreamRecord& r : recs) {
        uint64_t framed = r.length + kRecordOverheadBytes;
        frames.push_back({r.offset, framed, framed});
        records.push_back({static_cast<uint32_t>(frames.size() - 1), 0, r.length});
      }
      break;
    case Codec::kGzip:
      frames.push_back({0, info.size, reader->stream_bytes()});
      for (const StreamRecord& r : recs) records.push_back({0, r.offset, r.length});
      break;
    case Codec::kZstd:
      return GroupZstdFrames(reader->source().frames(), recs);
  }
  if (frames.size() > UINT32_MAX) {
    return ResourceExhausted(shard_path + ": too many records for an index");
  }
  return ShardIndex(reader->codec(), std::move(frames), std::move(records));
}

}  // namespace sluice::format

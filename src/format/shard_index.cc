// ShardIndex: the "<shard>.idx" file (layout: docs/format.md, "The index file") and Build.
#include "sluice/format/shard_index.h"

#include <algorithm>

#include "format/framing.h"
#include "format/index_table.h"
#include "format/record_stream.h"
#include "sluice/base/crc32c.h"

namespace sluice::format {

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
  SLUICE_RETURN_IF_ERROR(CheckIndexFraming(data, data.size(), source));
  ByteView body = data.substr(0, data.size() - kIndexCrcBytes);
  if (crc32c::Unmask(DecodeFixed32(data.data() + body.size())) != crc32c::Value(body)) {
    return DataLoss(source + ": corrupt index: CRC mismatch");
  }
  SLUICE_ASSIGN_OR_RETURN(IndexHeader header, ParseIndexHeader(data, data.size(), source));
  body.remove_prefix(kIndexHeaderBytes);
  std::vector<IndexFrame> frames(header.num_frames);
  std::vector<IndexRecord> records(header.num_records);
  FrameCursor frame_cursor;
  for (uint64_t i = 0; i < frames.size(); ++i) {
    EntryFault fault = DecodeFrameEntry(&body, &frame_cursor, &frames[i]);
    if (fault) return BadEntry(source, i, fault);
  }
  RecordCursor cursor;
  for (uint64_t i = 0; i < records.size(); ++i) {
    EntryFault fault = DecodeRecordEntry(&body, frames.size(), &cursor, &records[i]);
    if (!fault) fault = RecordFitsFrame(cursor, frames[cursor.frame]);
    if (fault) return BadEntry(source, i, fault);
  }
  if (!body.empty()) {
    return DataLoss(source + ": corrupt index: " + std::to_string(body.size()) +
                    " unexpected bytes after the record table");
  }
  return ShardIndex(header.codec, std::move(frames), std::move(records));
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

namespace {

// Reads the whole shard with `options` and indexes the records it returns.
Result<ShardIndex> IndexRecords(io::FileSystem* fs, const std::string& shard_path,
                                const RecordReaderOptions& options,
                                std::vector<SkippedRange>* skipped) {
  SLUICE_ASSIGN_OR_RETURN(auto reader,
                          RecordStreamReader::Open(fs, shard_path, options, /*keep_frames=*/true));
  std::vector<StreamRecord> recs;
  ByteView record;
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    recs.push_back({reader->record_offset(), record.size()});
  }
  if (skipped != nullptr) *skipped = reader->skipped();
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

}  // namespace

Result<ShardIndex> ShardIndex::Build(io::FileSystem* fs, const std::string& shard_path,
                                     const RecordReaderOptions& options) {
  RecordReaderOptions strict = options;
  strict.policy = CorruptionPolicy::kStrict;
  strict.tolerate_torn_tail = false;
  strict.verify_crc = true;
  return IndexRecords(fs, shard_path, strict, nullptr);
}

Result<ShardIndex> ShardIndex::Recover(io::FileSystem* fs, const std::string& shard_path,
                                       std::vector<SkippedRange>* lost,
                                       const RecordReaderOptions& options) {
  RecordReaderOptions skip = options;
  skip.policy = CorruptionPolicy::kSkip;
  skip.verify_crc = true;
  return IndexRecords(fs, shard_path, skip, lost);
}

}  // namespace sluice::format

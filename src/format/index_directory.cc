// IndexDirectory: the index file read lazily (docs/format.md, "How the reader uses the
// index"), and the in-memory IndexLookup over a whole ShardIndex.
#include "format/index_directory.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "format/framing.h"
#include "format/index_block_cache.h"
#include "format/index_table.h"
#include "sluice/base/crc32c.h"

namespace sluice::format {
namespace {

constexpr uint64_t K = kIndexBlockEntries;
constexpr size_t kScanChunkBytes = size_t{64} << 10;

// Reads [begin, end) of the index file front to back through one buffer of kScanChunkBytes,
// keeping the CRC32C of the bytes consumed.
class IndexStream {
 public:
  IndexStream(const io::RandomAccessFile* file, uint64_t begin, uint64_t end)
      : file_(file), end_(end), buf_(kScanChunkBytes, '\0'), base_(begin) {}

  uint64_t position() const { return base_ + pos_; }
  // The unread bytes from position(): at least `want` (<= kScanChunkBytes) of them unless
  // the range ends first.
  Result<ByteView> Peek(size_t want);
  void Consume(size_t n) { pos_ += n; }
  // CRC32C of the bytes consumed since the previous call (or the start).
  uint32_t TakeCrc() {
    crc_ = crc32c::Extend(crc_, buf_.data() + crc_from_, pos_ - crc_from_);
    crc_from_ = pos_;
    return std::exchange(crc_, 0);
  }

 private:
  const io::RandomAccessFile* file_;
  const uint64_t end_;
  std::string buf_;
  uint64_t base_;        // file offset of buf_[0]
  size_t len_ = 0;       // bytes of buf_ filled
  size_t pos_ = 0;       // next byte to consume
  size_t crc_from_ = 0;  // first consumed byte not yet in crc_
  uint32_t crc_ = 0;
};

Result<ByteView> IndexStream::Peek(size_t want) {
  if (len_ - pos_ < want && base_ + len_ < end_) {
    crc_ = crc32c::Extend(crc_, buf_.data() + crc_from_, pos_ - crc_from_);
    std::memmove(buf_.data(), buf_.data() + pos_, len_ - pos_);
    base_ += pos_;
    len_ -= pos_;
    pos_ = crc_from_ = 0;
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf_.size() - len_, end_ - (base_ + len_)));
    SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(base_ + len_, n, buf_.data() + len_));
    if (got.size() != n) {
      return DataLoss(file_->path() + ": index file shrank while it was read");
    }
    if (got.data() != buf_.data() + len_) std::memcpy(buf_.data() + len_, got.data(), n);
    len_ += n;
  }
  return ByteView(buf_.data() + pos_, len_ - pos_);
}

// Block b of a table spans [checkpoints[b].position, checkpoints[b + 1].position) of the
// index file; the last checkpoint is a sentinel at the table's end. `crc` is the CRC32C of
// the block's bytes at open, so that a later read can tell whether they are still the same.
struct FrameCheckpoint {
  uint64_t position = 0;
  uint64_t end = 0;  // FrameCursor before the block
  uint32_t crc = 0;
};
struct RecordCheckpoint {
  uint64_t position = 0;
  uint64_t end_in_frame = 0;  // RecordCursor before the block
  uint32_t frame = 0;
  uint32_t crc = 0;
};

// Starts a checkpoint at `in`'s position, sealing the previous block with its CRC.
template <typename Checkpoint>
void StartBlock(std::vector<Checkpoint>* checkpoints, IndexStream* in, Checkpoint next) {
  if (!checkpoints->empty()) checkpoints->back().crc = in->TakeCrc();
  next.position = in->position();
  checkpoints->push_back(next);
}

class IndexDirectory final : public IndexLookup {
 public:
  IndexDirectory(std::unique_ptr<io::RandomAccessFile> file, std::shared_ptr<IndexBlockCache> cache)
      : file_(std::move(file)), cache_(std::move(cache)) {}

  // The scan at open, in order: the CRC of the whole file, the header, the frame table, the
  // record table (with a second walk of the frame table for the frames' sizes).
  Status Scan(ByteView head);

  Codec codec() const override { return header_.codec; }
  uint64_t num_records() const override { return header_.num_records; }
  uint64_t end_offset() const override { return end_offset_; }
  Status Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const override;

 private:
  const std::string& path() const { return file_->path(); }
  Status CheckFileCrc(IndexStream* in) const;
  Status ScanFrames();
  Status ScanRecords();
  // Decodes entry i at the front of `in` with decode(ByteView*), consuming its bytes.
  template <typename DecodeEntry>
  Status NextEntry(IndexStream* in, uint64_t i, DecodeEntry decode) const;
  Status FrameAt(uint64_t j, IndexFrame* frame) const;
  // The bytes of block b of a table into *bytes: from the cache, or read from the file and
  // checked against the CRC the block had at open (then cached).
  Status ReadBlock(uint64_t table_id, uint64_t b, uint64_t begin, uint64_t end, uint32_t crc,
                   std::string* bytes) const;
  // Entry i of a table: decoded with decode(ByteView*, Cursor*, Entry*) from the checkpoint
  // of its block (`begin`, `end`, `crc`, `start`), or found in what this thread decoded of
  // that block already.
  template <typename Entry, typename Cursor, typename DecodeEntry>
  Status LoadEntry(uint64_t table_id, uint64_t i, uint64_t begin, uint64_t end, uint32_t crc,
                   Cursor start, DecodeEntry decode, Entry* entry) const;

  std::unique_ptr<io::RandomAccessFile> file_;
  std::shared_ptr<IndexBlockCache> cache_;
  IndexHeader header_;
  uint64_t body_end_ = 0;       // where the CRC starts
  uint64_t records_begin_ = 0;  // where the record table starts
  uint64_t end_offset_ = 0;
  // Every record i is alone in frame i (codec none as sluice writes it): the record table
  // says nothing the frame table does not, so lookups skip it and it has no checkpoints.
  bool records_are_frames_ = false;
  std::vector<FrameCheckpoint> frame_checkpoints_;
  std::vector<RecordCheckpoint> record_checkpoints_;
  const uint64_t frame_table_id_ = IndexBlockCache::NewTableId();
  const uint64_t record_table_id_ = IndexBlockCache::NewTableId();
};

Status IndexDirectory::Scan(ByteView head) {
  body_end_ = file_->size() - kIndexCrcBytes;
  IndexStream whole(file_.get(), 0, body_end_);
  SLUICE_RETURN_IF_ERROR(CheckFileCrc(&whole));
  SLUICE_ASSIGN_OR_RETURN(header_, ParseIndexHeader(head, file_->size(), path()));
  SLUICE_RETURN_IF_ERROR(ScanFrames());
  return ScanRecords();
}

Status IndexDirectory::CheckFileCrc(IndexStream* in) const {
  while (in->position() < body_end_) {
    SLUICE_ASSIGN_OR_RETURN(ByteView chunk, in->Peek(kScanChunkBytes));
    if (chunk.empty()) break;  // cannot happen: Peek fails rather than return nothing
    in->Consume(chunk.size());
  }
  char stored[kIndexCrcBytes];
  SLUICE_ASSIGN_OR_RETURN(ByteView crc, file_->Read(body_end_, sizeof stored, stored));
  if (crc.size() != sizeof stored || crc32c::Unmask(DecodeFixed32(crc.data())) != in->TakeCrc()) {
    return DataLoss(path() + ": corrupt index: CRC mismatch");
  }
  return Status::OK();
}

template <typename DecodeEntry>
Status IndexDirectory::NextEntry(IndexStream* in, uint64_t i, DecodeEntry decode) const {
  SLUICE_ASSIGN_OR_RETURN(ByteView bytes, in->Peek(kMaxEntryBytes));
  const size_t before = bytes.size();
  if (EntryFault fault = decode(&bytes)) return BadEntry(path(), i, fault);
  in->Consume(before - bytes.size());
  return Status::OK();
}

Status IndexDirectory::ScanFrames() {
  IndexStream in(file_.get(), kIndexHeaderBytes, body_end_);
  frame_checkpoints_.reserve(header_.num_frames / K + 2);
  FrameCursor cursor;
  IndexFrame frame;
  for (uint64_t i = 0; i < header_.num_frames; ++i) {
    if (i % K == 0) StartBlock(&frame_checkpoints_, &in, FrameCheckpoint{0, cursor.end, 0});
    SLUICE_RETURN_IF_ERROR(
        NextEntry(&in, i, [&](ByteView* b) { return DecodeFrameEntry(b, &cursor, &frame); }));
  }
  StartBlock(&frame_checkpoints_, &in, FrameCheckpoint{0, cursor.end, 0});  // the sentinel
  records_begin_ = in.position();
  end_offset_ = cursor.end;
  return Status::OK();
}

Status IndexDirectory::ScanRecords() {
  IndexStream in(file_.get(), records_begin_, body_end_);
  IndexStream frames(file_.get(), kIndexHeaderBytes, records_begin_);  // for the frames' sizes
  FrameCursor frame_cursor;
  IndexFrame frame;
  uint64_t frames_read = 0;
  RecordCursor cursor;
  IndexRecord record;
  const uint64_t n = header_.num_records;
  record_checkpoints_.reserve(n / K + 2);
  records_are_frames_ = n == header_.num_frames;
  for (uint64_t i = 0; i < n; ++i) {
    if (i % K == 0) {
      StartBlock(&record_checkpoints_, &in,
                 RecordCheckpoint{0, cursor.end_in_frame, static_cast<uint32_t>(cursor.frame), 0});
    }
    SLUICE_RETURN_IF_ERROR(NextEntry(&in, i, [&](ByteView* b) {
      return DecodeRecordEntry(b, header_.num_frames, &cursor, &record);
    }));
    for (; frames_read <= cursor.frame; ++frames_read) {  // records never go back a frame
      SLUICE_RETURN_IF_ERROR(NextEntry(&frames, frames_read, [&](ByteView* b) {
        return DecodeFrameEntry(b, &frame_cursor, &frame);
      }));
    }
    if (EntryFault fault = RecordFitsFrame(cursor, frame)) return BadEntry(path(), i, fault);
    records_are_frames_ = records_are_frames_ && record.frame == i && record.offset_in_frame == 0 &&
                          record.length + kRecordOverheadBytes == frame.uncompressed_bytes;
  }
  StartBlock(&record_checkpoints_, &in, RecordCheckpoint{});  // the sentinel
  if (in.position() != body_end_) {
    return DataLoss(path() + ": corrupt index: " + std::to_string(body_end_ - in.position()) +
                    " unexpected bytes after the record table");
  }
  if (records_are_frames_) std::vector<RecordCheckpoint>().swap(record_checkpoints_);
  return Status::OK();
}

Status IndexDirectory::ReadBlock(uint64_t table_id, uint64_t b, uint64_t begin, uint64_t end,
                                 uint32_t crc, std::string* bytes) const {
  const IndexBlockCache::Key key{table_id, b};
  if (cache_->Find(key, bytes)) return Status::OK();
  auto changed = [&](const char* why) {
    return DataLoss(path() + ": index changed since it was opened: entries " +
                    std::to_string(b * K) + ".." + std::to_string(b * K + K - 1) + " of its " +
                    (table_id == frame_table_id_ ? "frame" : "record") + " table (bytes " +
                    std::to_string(begin) + ".." + std::to_string(end) + ") " + why);
  };
  bytes->resize(end - begin);  // at most K * kMaxEntryBytes
  SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(begin, bytes->size(), bytes->data()));
  if (got.size() != bytes->size()) return changed("are cut short");
  if (Crc32c(got.data(), got.size()) != crc) return changed("no longer match their CRC");
  if (got.data() != bytes->data()) bytes->assign(got.data(), got.size());
  cache_->Insert(key, *bytes);
  return Status::OK();
}

// What a thread decoded last of one table: a block's bytes and its first `decoded` entries,
// so that lookups of a block's entries in order (sequential reads, block shuffle) decode
// each entry once, and a random lookup decodes only up to the entry it wants.
template <typename Entry, typename Cursor>
struct DecodedBlock {
  uint64_t table = 0;  // 0: nothing decoded
  uint64_t block = 0;
  std::string bytes;
  size_t consumed = 0;
  uint64_t decoded = 0;
  Cursor cursor;
  std::array<Entry, K> entries;
};

template <typename Entry, typename Cursor, typename DecodeEntry>
Status IndexDirectory::LoadEntry(uint64_t table_id, uint64_t i, uint64_t begin, uint64_t end,
                                 uint32_t crc, Cursor start, DecodeEntry decode,
                                 Entry* entry) const {
  thread_local DecodedBlock<Entry, Cursor> memo;
  const uint64_t b = i / K;
  const uint64_t j = i % K;
  if (memo.table != table_id || memo.block != b || memo.decoded == 0) {
    memo.table = 0;  // until the block's bytes are in
    SLUICE_RETURN_IF_ERROR(ReadBlock(table_id, b, begin, end, crc, &memo.bytes));
    memo.table = table_id;
    memo.block = b;
    memo.consumed = 0;
    memo.decoded = 0;
    memo.cursor = start;
  }
  if (memo.decoded <= j) {
    ByteView rest = ByteView(memo.bytes).substr(memo.consumed);
    for (; memo.decoded <= j; ++memo.decoded) {
      if (EntryFault fault = decode(&rest, &memo.cursor, &memo.entries[memo.decoded])) {
        memo.table = 0;
        return BadEntry(path(), b * K + memo.decoded, fault);
      }
    }
    memo.consumed = memo.bytes.size() - rest.size();
  }
  *entry = memo.entries[j];
  return Status::OK();
}

Status IndexDirectory::FrameAt(uint64_t j, IndexFrame* frame) const {
  if (j >= header_.num_frames) {
    return DataLoss(path() + ": corrupt index: frame " + std::to_string(j) + " out of range");
  }
  const FrameCheckpoint& cp = frame_checkpoints_[j / K];
  return LoadEntry(
      frame_table_id_, j, cp.position, (&cp + 1)->position, cp.crc, FrameCursor{cp.end},
      [](ByteView* in, FrameCursor* c, IndexFrame* f) { return DecodeFrameEntry(in, c, f); },
      frame);
}

Status IndexDirectory::Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const {
  if (i >= header_.num_records) {
    return OutOfRange(path() + ": entry " + std::to_string(i) + " out of range (" +
                      std::to_string(header_.num_records) + " records)");
  }
  if (records_are_frames_) {
    SLUICE_RETURN_IF_ERROR(FrameAt(i, frame));
    if (frame->uncompressed_bytes < kRecordOverheadBytes) {
      return DataLoss(path() + ": corrupt index: frame " + std::to_string(i) +
                      " is too small for a record");
    }
    *record =
        IndexRecord{static_cast<uint32_t>(i), 0, frame->uncompressed_bytes - kRecordOverheadBytes};
    return Status::OK();
  }
  const RecordCheckpoint& cp = record_checkpoints_[i / K];
  const uint64_t num_frames = header_.num_frames;
  SLUICE_RETURN_IF_ERROR(LoadEntry(
      record_table_id_, i, cp.position, (&cp + 1)->position, cp.crc,
      RecordCursor{cp.frame, cp.end_in_frame},
      [num_frames](ByteView* in, RecordCursor* c, IndexRecord* r) {
        return DecodeRecordEntry(in, num_frames, c, r);
      },
      record));
  return FrameAt(record->frame, frame);
}

class InMemoryIndexLookup final : public IndexLookup {
 public:
  explicit InMemoryIndexLookup(ShardIndex index) : index_(std::move(index)) {}
  Codec codec() const override { return index_.codec(); }
  uint64_t num_records() const override { return index_.num_records(); }
  uint64_t end_offset() const override {
    const auto& frames = index_.frames();
    return frames.empty() ? 0 : frames.back().file_offset + frames.back().file_bytes;
  }
  Status Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const override {
    if (i >= index_.num_records()) {
      return OutOfRange("index entry " + std::to_string(i) + " out of range (" +
                        std::to_string(index_.num_records()) + " records)");
    }
    *record = index_.records()[i];
    *frame = index_.frames()[record->frame];
    return Status::OK();
  }

 private:
  ShardIndex index_;
};

}  // namespace

std::unique_ptr<IndexLookup> NewInMemoryIndexLookup(ShardIndex index) {
  return std::make_unique<InMemoryIndexLookup>(std::move(index));
}

Result<std::unique_ptr<IndexLookup>> OpenIndexDirectory(io::FileSystem* fs,
                                                        const std::string& index_path,
                                                        std::shared_ptr<IndexBlockCache> cache) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file, fs->OpenForRead(index_path));
  char head_bytes[kIndexHeaderBytes];
  SLUICE_ASSIGN_OR_RETURN(ByteView head, file->Read(0, sizeof head_bytes, head_bytes));
  SLUICE_RETURN_IF_ERROR(CheckIndexFraming(head, file->size(), index_path));
  if (head.size() != kIndexHeaderBytes) {
    return DataLoss(index_path + ": index file shrank while it was read");
  }
  if (cache == nullptr) cache = NewIndexBlockCache();
  auto directory = std::make_unique<IndexDirectory>(std::move(file), std::move(cache));
  SLUICE_RETURN_IF_ERROR(directory->Scan(head));
  return std::unique_ptr<IndexLookup>(std::move(directory));
}

}  // namespace sluice::format

// IndexDirectory: the index file read lazily (docs/format.md, "How the reader uses the
// index"): the scan at open (index_stream.h) builds each table's checkpoints
// (index_spans.h); lookups read, check and cache blocks of spans. The in-memory IndexLookup
// is in index_lookup.cc.
#include "format/index_directory.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "format/framing.h"
#include "format/index_block_cache.h"
#include "format/index_spans.h"
#include "format/index_stream.h"
#include "format/index_table.h"
#include "format/retained_index.h"
#include "sluice/base/crc32c.h"

namespace sluice::format {
namespace {

constexpr uint64_t K = kIndexBlockEntries;
using index_spans::Checkpoint;
using index_spans::CheckpointAt;
using index_spans::EndTable;
using index_spans::kStatePrefixBytes;
using index_spans::MaybeStartSpan;
using index_spans::PutStatePrefix;
using index_spans::ResumeAt;
using index_spans::SpanFor;
using index_spans::Table;

// A range walk (LocateRange) reads the spans of a table it needs at once, up to kRunBytes,
// instead of one read per span: a chunk's records cost one read of the index file, which
// matters where a read has a fixed cost (an object store, a cache file, a syscall).
constexpr uint64_t kRunBytes = uint64_t{1} << 20;
struct SpanRun {
  uint64_t table = 0;     // the table a walk of this thread is under way in (0: none)
  uint64_t end_span = 0;  // the walk needs spans before this one
  uint64_t first = 0;     // spans first .. end - 1 are in `bytes` (first == end: none)
  uint64_t end = 0;
  uint64_t begin = 0;  // file offset of bytes[0]
  std::string bytes;
};
thread_local SpanRun t_run;

// Marks this thread's walk of a table for ReadSpan while it lives.
class RunScope {
 public:
  RunScope(uint64_t table, uint64_t end_span) {
    t_run.table = table;
    t_run.end_span = end_span;
    t_run.first = t_run.end = 0;
  }
  ~RunScope() { t_run.table = 0; }
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;
};

class IndexDirectory final : public IndexLookup {
 public:
  IndexDirectory(std::unique_ptr<io::RandomAccessFile> file, std::shared_ptr<IndexBlockCache> cache)
      : file_(std::move(file)), cache_(std::move(cache)) {}

  // The scan at open, in order: the CRC of the whole file, the header, the frame table, the
  // record table (with a second walk of the frame table for the frames' sizes).
  Status Scan(ByteView head, uint64_t table_budget_bytes, uint64_t chunk_bytes,
              const IndexEntryVisitor& visit);

  Codec codec() const override { return header_.codec; }
  uint64_t num_records() const override { return header_.num_records; }
  uint64_t end_offset() const override { return end_offset_; }
  Status Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const override;
  Status Frame(uint64_t j, IndexFrame* frame) const override { return FrameAt(j, frame); }
  Status LocateRange(uint64_t first, uint64_t count, const IndexEntryVisitor& visit) const override;
  Status LocateRangeInto(uint64_t first, uint64_t count,
                         std::vector<RangeEntry>* out) const override;
  const std::vector<ShardChunk>& chunks() const override { return chunks_; }
  uint32_t checksum() const override { return checksum_; }
  uint64_t memory_bytes() const override {
    return (frames_.checkpoints.capacity() + records_.checkpoints.capacity()) * sizeof(Checkpoint);
  }

 private:
  const std::string& path() const { return file_->path(); }
  Status CheckFileCrc(IndexStream* in);
  Status ScanFrames();
  Status ScanRecords(uint64_t chunk_bytes, const IndexEntryVisitor& visit);
  // Decodes entry i at the front of `in` with decode(ByteView*), consuming its bytes.
  template <typename DecodeEntry>
  Status NextEntry(IndexStream* in, uint64_t i, DecodeEntry decode) const;
  Status FrameAt(uint64_t j, IndexFrame* frame) const;
  // Record i alone in `frame` (records_are_frames_): the whole frame but its framing.
  Status RecordOfItsFrame(uint64_t i, const IndexFrame& frame, IndexRecord* record) const;
  // The bytes of span s of `table` into *bytes, read from the file and checked against the
  // CRC the span had at open; within a range walk (RunScope), from the bytes of the spans
  // ReadRun read at once.
  Status ReadSpan(const Table& table, uint64_t s, std::string* bytes) const;
  // Reads spans s .. of `table` that this thread's walk needs, up to kRunBytes, into t_run
  // (nothing when only span s fits, or the read fails: ReadSpan then reads span s alone).
  void ReadRun(const Table& table, uint64_t s) const;
  // The bytes of block b of `table` into *bytes and the decoder state before it into *start:
  // from the cache, or else from the file. A span of several blocks is read whole (for its
  // CRC) and walked with decode(ByteView*, Cursor*, Entry*) up to the block, which is cached
  // with the state before it (this thread's walk is kept for the span's next blocks).
  template <typename Entry, typename Cursor, typename DecodeEntry>
  Status BlockAt(const Table& table, uint64_t b, DecodeEntry decode, std::string* bytes,
                 Cursor* start) const;
  // Entry i of `table`, decoded from the start of its block, or found in what this thread
  // decoded of that block already.
  template <typename Entry, typename Cursor, typename DecodeEntry>
  Status LoadEntry(const Table& table, uint64_t i, DecodeEntry decode, Entry* entry) const;
  // Record entries first .. first + count - 1 with their frames to fn(i, record, frame):
  // LocateRange and LocateRangeInto.
  template <typename Fn>
  Status WalkRecords(uint64_t first, uint64_t count, Fn fn) const;
  // Entries first .. end - 1 of `table` in order to fn(i, entry, Status* error), each block
  // decoded once; fn returns false to stop, with *error set (a walk costs nanoseconds per
  // entry: no Status is made for one that is fine).
  template <typename Entry, typename Cursor, typename DecodeEntry, typename Fn>
  Status WalkEntries(const Table& table, uint64_t first, uint64_t end, DecodeEntry decode,
                     Fn fn) const;

  std::unique_ptr<io::RandomAccessFile> file_;
  std::shared_ptr<IndexBlockCache> cache_;
  IndexHeader header_;
  uint64_t body_end_ = 0;       // where the CRC starts
  uint64_t records_begin_ = 0;  // where the record table starts
  uint64_t end_offset_ = 0;
  // Every record i is alone in frame i (codec none as sluice writes it): the record table
  // says nothing the frame table does not, so lookups skip it and it has no checkpoints.
  bool records_are_frames_ = false;
  Table frames_{"frame"};
  Table records_{"record"};
  std::vector<ShardChunk> chunks_;
  uint32_t checksum_ = 0;  // the CRC stored at the end of the file
};

Status IndexDirectory::Scan(ByteView head, uint64_t table_budget_bytes, uint64_t chunk_bytes,
                            const IndexEntryVisitor& visit) {
  body_end_ = file_->size() - kIndexCrcBytes;
  IndexStream whole(file_.get(), 0, body_end_);
  SLUICE_RETURN_IF_ERROR(CheckFileCrc(&whole));
  SLUICE_ASSIGN_OR_RETURN(header_, ParseIndexHeader(head, file_->size(), path()));
  frames_.entries = header_.num_frames;
  frames_.span = SpanFor(frames_.entries, table_budget_bytes);
  records_.entries = header_.num_records;
  records_.span = SpanFor(records_.entries, table_budget_bytes);
  SLUICE_RETURN_IF_ERROR(ScanFrames());
  return ScanRecords(chunk_bytes, visit);
}

Status IndexDirectory::CheckFileCrc(IndexStream* in) {
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
  checksum_ = crc32c::Unmask(DecodeFixed32(crc.data()));
  return Status::OK();
}

template <typename DecodeEntry>
Status IndexDirectory::NextEntry(IndexStream* in, uint64_t i, DecodeEntry decode) const {
  // Peek only when the buffer runs short: its Result, per entry, cost more than the decoding.
  ByteView bytes = in->Unread();
  if (bytes.size() < kMaxEntryBytes) {
    SLUICE_ASSIGN_OR_RETURN(bytes, in->Peek(kMaxEntryBytes));
  }
  const size_t before = bytes.size();
  if (EntryFault fault = decode(&bytes)) return BadEntry(path(), i, fault);
  in->Consume(before - bytes.size());
  return Status::OK();
}

Status IndexDirectory::ScanFrames() {
  IndexStream in(file_.get(), kIndexHeaderBytes, body_end_);
  frames_.checkpoints.reserve(header_.num_frames / (K * frames_.span) + 2);
  FrameCursor cursor;
  IndexFrame frame;
  for (uint64_t i = 0; i < header_.num_frames; ++i) {
    MaybeStartSpan(&frames_, &in, i, cursor);
    SLUICE_RETURN_IF_ERROR(
        NextEntry(&in, i, [&](ByteView* b) { return DecodeFrameEntry(b, &cursor, &frame); }));
  }
  EndTable(&frames_, &in);
  records_begin_ = in.position();
  end_offset_ = cursor.end;
  return Status::OK();
}

Status IndexDirectory::ScanRecords(uint64_t chunk_bytes, const IndexEntryVisitor& visit) {
  IndexStream in(file_.get(), records_begin_, body_end_);
  IndexStream frames(file_.get(), kIndexHeaderBytes, records_begin_);  // for the frames' sizes
  FrameCursor frame_cursor;
  IndexFrame frame;
  uint64_t frames_read = 0;
  RecordCursor cursor;
  IndexRecord record;
  const uint64_t n = header_.num_records;
  records_.checkpoints.reserve(n / (K * records_.span) + 2);
  records_are_frames_ = n == header_.num_frames;
  ChunkTableBuilder chunker(chunk_bytes);
  for (uint64_t i = 0; i < n; ++i) {
    MaybeStartSpan(&records_, &in, i, cursor);
    SLUICE_RETURN_IF_ERROR(NextEntry(&in, i, [&](ByteView* b) {
      return DecodeRecordEntry(b, header_.num_frames, &cursor, &record);
    }));
    for (; frames_read <= cursor.frame; ++frames_read) {  // records never go back a frame
      SLUICE_RETURN_IF_ERROR(NextEntry(&frames, frames_read, [&](ByteView* b) {
        return DecodeFrameEntry(b, &frame_cursor, &frame);
      }));
    }
    if (EntryFault fault = RecordFitsFrame(cursor, frame)) return BadEntry(path(), i, fault);
    chunker.AddRecord(i, cursor.frame, frame);
    if (visit) visit(i, record, frame);
    records_are_frames_ = records_are_frames_ && record.frame == i && record.offset_in_frame == 0 &&
                          record.length + kRecordOverheadBytes == frame.uncompressed_bytes;
  }
  EndTable(&records_, &in);
  if (in.position() != body_end_) {
    return DataLoss(path() + ": corrupt index: " + std::to_string(body_end_ - in.position()) +
                    " unexpected bytes after the record table");
  }
  if (records_are_frames_) std::vector<Checkpoint>().swap(records_.checkpoints);
  chunks_ = chunker.Finish();
  chunks_.shrink_to_fit();
  return Status::OK();
}

Status IndexDirectory::ReadSpan(const Table& table, uint64_t s, std::string* bytes) const {
  const uint64_t begin = table.checkpoints[s].position;
  const uint64_t end = table.checkpoints[s + 1].position;
  const uint64_t first = s * table.span * K;
  auto changed = [&](const char* why) {
    return DataLoss(path() + ": index changed since it was opened: entries " +
                    std::to_string(first) + ".." +
                    std::to_string(std::min(first + table.span * K, table.entries) - 1) +
                    " of its " + table.name + " table (bytes " + std::to_string(begin) + ".." +
                    std::to_string(end) + ") " + why);
  };
  ByteView got;
  if (t_run.table == table.id && s < t_run.end_span) {
    if (s < t_run.first || s >= t_run.end) ReadRun(table, s);
    if (s >= t_run.first && s < t_run.end) {
      got = ByteView(t_run.bytes).substr(begin - t_run.begin, end - begin);
    }
  }
  if (got.empty()) {
    bytes->resize(end - begin);  // at most span * K * kMaxEntryBytes
    SLUICE_ASSIGN_OR_RETURN(got, file_->Read(begin, bytes->size(), bytes->data()));
  }
  if (got.size() != end - begin) return changed("are cut short");
  if (Crc32c(got.data(), got.size()) != table.checkpoints[s].crc) {
    return changed("no longer match their CRC");
  }
  if (got.data() != bytes->data()) bytes->assign(got.data(), got.size());
  return Status::OK();
}

void IndexDirectory::ReadRun(const Table& table, uint64_t s) const {
  const std::vector<Checkpoint>& cp = table.checkpoints;
  uint64_t e = s + 1;
  while (e < t_run.end_span && cp[e + 1].position - cp[s].position <= kRunBytes) ++e;
  t_run.first = t_run.end = 0;
  if (e == s + 1) return;  // one span: read as usual
  t_run.bytes.resize(cp[e].position - cp[s].position);
  Result<ByteView> got = file_->Read(cp[s].position, t_run.bytes.size(), t_run.bytes.data());
  // A failed or short read is left to the span's own read, whose error names the span.
  if (!got.ok() || got->size() != t_run.bytes.size()) return;
  if (got->data() != t_run.bytes.data()) t_run.bytes.assign(got->data(), got->size());
  t_run.first = s;
  t_run.end = e;
  t_run.begin = cp[s].position;
}

// Where a thread's walk through a span of one table stands: the span's bytes (checked),
// the next block to walk and the decoder state before it. Lookups of the span's blocks in
// order (sequential reads) continue the walk instead of reading the span again.
template <typename Cursor>
struct SpanWalk {
  uint64_t table = 0;  // 0: no walk
  uint64_t span = 0;
  std::string bytes;
  uint64_t next_block = 0;
  size_t consumed = 0;
  Cursor cursor;
};

template <typename Entry, typename Cursor, typename DecodeEntry>
Status IndexDirectory::BlockAt(const Table& table, uint64_t b, DecodeEntry decode,
                               std::string* bytes, Cursor* start) const {
  const IndexBlockCache::Key key{table.id, b};
  const uint64_t s = b / table.span;
  if (table.span == 1) {  // a checkpoint per block: the cache holds the bare bytes
    ResumeAt(table.checkpoints[s], start);
    if (cache_->Find(key, bytes)) return Status::OK();
    SLUICE_RETURN_IF_ERROR(ReadSpan(table, s, bytes));
    cache_->Insert(key, *bytes);
    return Status::OK();
  }
  if (cache_->Find(key, bytes) && bytes->size() >= kStatePrefixBytes) {
    ResumeAt(Checkpoint{0, DecodeFixed64(bytes->data()), DecodeFixed32(bytes->data() + 8), 0},
             start);
    bytes->erase(0, kStatePrefixBytes);
    return Status::OK();
  }
  thread_local SpanWalk<Cursor> walk;
  if (walk.table != table.id || walk.span != s || walk.next_block > b) {
    walk.table = 0;  // until the span's bytes are in
    SLUICE_RETURN_IF_ERROR(ReadSpan(table, s, &walk.bytes));
    walk = {table.id, s, std::move(walk.bytes), s * table.span, 0, Cursor{}};
    ResumeAt(table.checkpoints[s], &walk.cursor);
  }
  // Walks blocks next_block..b, decoding their entries only to advance the state.
  ByteView rest = ByteView(walk.bytes).substr(walk.consumed);
  Entry entry;
  for (; walk.next_block <= b; ++walk.next_block) {
    const size_t from = walk.bytes.size() - rest.size();
    *start = walk.cursor;
    const uint64_t k = walk.next_block;
    for (uint64_t i = k * K; i < std::min((k + 1) * K, table.entries); ++i) {
      if (EntryFault fault = decode(&rest, &walk.cursor, &entry)) {
        walk.table = 0;
        return BadEntry(path(), i, fault);
      }
    }
    if (k == b) {
      const size_t size = walk.bytes.size() - rest.size() - from;
      PutStatePrefix(CheckpointAt(*start), bytes);
      bytes->append(walk.bytes, from, size);
      cache_->Insert(key, *bytes);
      bytes->erase(0, kStatePrefixBytes);
    }
  }
  walk.consumed = walk.bytes.size() - rest.size();
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
Status IndexDirectory::LoadEntry(const Table& table, uint64_t i, DecodeEntry decode,
                                 Entry* entry) const {
  thread_local DecodedBlock<Entry, Cursor> memo;
  const uint64_t b = i / K;
  const uint64_t j = i % K;
  if (memo.table != table.id || memo.block != b || memo.decoded == 0) {
    memo.table = 0;  // until the block's bytes are in
    SLUICE_RETURN_IF_ERROR((BlockAt<Entry, Cursor>(table, b, decode, &memo.bytes, &memo.cursor)));
    memo.table = table.id;
    memo.block = b;
    memo.consumed = 0;
    memo.decoded = 0;
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
  return LoadEntry<IndexFrame, FrameCursor>(
      frames_, j,
      [](ByteView* in, FrameCursor* c, IndexFrame* f) { return DecodeFrameEntry(in, c, f); },
      frame);
}

Status IndexDirectory::RecordOfItsFrame(uint64_t i, const IndexFrame& frame,
                                        IndexRecord* record) const {
  if (frame.uncompressed_bytes < kRecordOverheadBytes) {
    return DataLoss(path() + ": corrupt index: frame " + std::to_string(i) +
                    " is too small for a record");
  }
  *record =
      IndexRecord{static_cast<uint32_t>(i), 0, frame.uncompressed_bytes - kRecordOverheadBytes};
  return Status::OK();
}

Status IndexDirectory::Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const {
  if (i >= header_.num_records) {
    return OutOfRange(path() + ": entry " + std::to_string(i) + " out of range (" +
                      std::to_string(header_.num_records) + " records)");
  }
  if (records_are_frames_) {
    SLUICE_RETURN_IF_ERROR(FrameAt(i, frame));
    return RecordOfItsFrame(i, *frame, record);
  }
  const uint64_t num_frames = header_.num_frames;
  SLUICE_RETURN_IF_ERROR((LoadEntry<IndexRecord, RecordCursor>(
      records_, i,
      [num_frames](ByteView* in, RecordCursor* c, IndexRecord* r) {
        return DecodeRecordEntry(in, num_frames, c, r);
      },
      record)));
  return FrameAt(record->frame, frame);
}

template <typename Entry, typename Cursor, typename DecodeEntry, typename Fn>
Status IndexDirectory::WalkEntries(const Table& table, uint64_t first, uint64_t end,
                                   DecodeEntry decode, Fn fn) const {
  thread_local std::string bytes;
  if (first >= end) return Status::OK();
  Status error;
  RunScope run(table.id, (end - 1) / K / table.span + 1);
  for (uint64_t b = first / K; b * K < end; ++b) {
    Cursor cursor;
    SLUICE_RETURN_IF_ERROR((BlockAt<Entry, Cursor>(table, b, decode, &bytes, &cursor)));
    ByteView rest(bytes);
    Entry entry;
    for (uint64_t i = b * K; i < std::min((b + 1) * K, end); ++i) {
      if (EntryFault fault = decode(&rest, &cursor, &entry)) return BadEntry(path(), i, fault);
      if (i >= first && !fn(i, entry, &error)) return error;
    }
  }
  return Status::OK();
}

template <typename Fn>
Status IndexDirectory::WalkRecords(uint64_t first, uint64_t count, Fn fn) const {
  if (first > header_.num_records || count > header_.num_records - first) {
    return OutOfRange(path() + ": entries " + std::to_string(first) + " + " +
                      std::to_string(count) + " out of range (" +
                      std::to_string(header_.num_records) + " records)");
  }
  if (records_are_frames_) {
    return WalkEntries<IndexFrame, FrameCursor>(
        frames_, first, first + count,
        // clang-format off
        [](ByteView* in, FrameCursor* c, IndexFrame* f) __attribute__((always_inline)) {
          return DecodeFrameEntry(in, c, f);
        },
        // clang-format on
        [&](uint64_t i, const IndexFrame& frame, Status* error) {
          if (frame.uncompressed_bytes < kRecordOverheadBytes) {
            IndexRecord record;
            *error = RecordOfItsFrame(i, frame, &record);  // its DataLoss
            return false;
          }
          fn(i,
             IndexRecord{static_cast<uint32_t>(i), 0,
                         frame.uncompressed_bytes - kRecordOverheadBytes},
             frame);
          return true;
        });
  }
  const uint64_t num_frames = header_.num_frames;
  IndexFrame frame;
  uint64_t frame_index = UINT64_MAX;
  return WalkEntries<IndexRecord, RecordCursor>(
      records_, first, first + count,
      // Inlined into the walk's loop (GCC kept it a call: its cursor and view then lived in
      // memory, ~a third of the walk).
      // clang-format off
      [num_frames](ByteView* in, RecordCursor* c, IndexRecord* r) __attribute__((always_inline)) {
        return DecodeRecordEntry(in, num_frames, c, r);
      },
      // clang-format on
      [&](uint64_t i, const IndexRecord& record, Status* error) {
        if (record.frame != frame_index) {  // records of a frame are consecutive
          *error = FrameAt(record.frame, &frame);
          if (!error->ok()) return false;
          frame_index = record.frame;
        }
        fn(i, record, frame);
        return true;
      });
}

Status IndexDirectory::LocateRange(uint64_t first, uint64_t count,
                                   const IndexEntryVisitor& visit) const {
  return WalkRecords(
      first, count, [&](uint64_t i, const IndexRecord& r, const IndexFrame& f) { visit(i, r, f); });
}

Status IndexDirectory::LocateRangeInto(uint64_t first, uint64_t count,
                                       std::vector<RangeEntry>* out) const {
  // Written field by field into entries made first: an entry built whole and copied in
  // costs a store-forwarding stall per entry, as much as the rest of the walk.
  out->resize(std::min(count, header_.num_records));
  RangeEntry* e = out->data();
  const Status s =
      WalkRecords(first, count, [&e](uint64_t, const IndexRecord& r, const IndexFrame& f) {
        e->record.frame = r.frame;
        e->record.offset_in_frame = r.offset_in_frame;
        e->record.length = r.length;
        e->frame_file_offset = f.file_offset;
        ++e;
      });
  out->resize(static_cast<size_t>(e - out->data()));
  return s;
}

}  // namespace

Result<std::unique_ptr<IndexLookup>> OpenIndexDirectory(
    io::FileSystem* fs, const std::string& index_path, std::shared_ptr<IndexBlockCache> cache,
    uint64_t table_budget_bytes, uint64_t chunk_bytes, const IndexEntryVisitor& visit) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                          OpenIndexFile(fs, index_path));
  char head_bytes[kIndexHeaderBytes];
  SLUICE_ASSIGN_OR_RETURN(ByteView head, file->Read(0, sizeof head_bytes, head_bytes));
  SLUICE_RETURN_IF_ERROR(CheckIndexFraming(head, file->size(), index_path));
  if (head.size() != kIndexHeaderBytes) {
    return DataLoss(index_path + ": index file shrank while it was read");
  }
  if (cache == nullptr) cache = NewIndexBlockCache();
  auto directory = std::make_unique<IndexDirectory>(std::move(file), std::move(cache));
  SLUICE_RETURN_IF_ERROR(directory->Scan(head, table_budget_bytes, chunk_bytes, visit));
  return std::unique_ptr<IndexLookup>(std::move(directory));
}

}  // namespace sluice::format

// ShardReader: random access through the index (an IndexLookup: the index file read lazily
// through an IndexDirectory, or a ShardIndex built in memory). codec none: one positional read per
// record. zstd: one frame read + decompression (the last frame decoded is cached per thread,
// so reading a frame's records in order decodes it once). gzip: the index has one frame,
// the whole file, so a read decodes the stream from its start (cached likewise).
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>

#include "format/chunk_decode.h"
#include "format/framing.h"
#include "format/index_directory.h"
#include "format/index_open.h"
#include "format/index_realign.h"
#include "format/shard_reader_impl.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {
namespace {

// Frames up to this size are decoded whole and cached; larger ones (foreign single-frame
// files) are decoded only up to the record asked for, and not cached.
constexpr uint64_t kWholeFrameBytes = uint64_t{64} << 20;
// Uncompressed reads that go forward (the next record, or one a few records on, as the
// threads of an unshuffled pipeline take turns) read this much ahead.
constexpr uint64_t kReadAheadBytes = uint64_t{256} << 10;
constexpr uint64_t kForwardRecords = 64;
constexpr size_t kInputChunkBytes = size_t{4} << 20;

struct ZstdDCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Per-thread decoder state and the last frame decoded, so concurrent Read() calls share
// nothing.
struct ThreadState {
  std::unique_ptr<ZSTD_DCtx, ZstdDCtxDeleter> zstd{ZSTD_createDCtx()};
  z_stream zlib{};
  bool zlib_live = false;
  std::string input;
  // The cached decoded prefix of one frame.
  uint64_t reader_id = 0;
  uint32_t frame = 0;
  std::string data;  // the bytes decoded: the whole frame, or those before an error
  Status error;      // why decoding stopped early
  // Uncompressed shards read forward record by record: the file bytes read ahead, so that
  // a sequential pass makes one read per kReadAheadBytes instead of one per record.
  uint64_t ahead_reader_id = 0;
  uint64_t ahead_offset = 0;  // file offset of ahead[0]
  std::string ahead;
  uint64_t last_reader_id = 0;  // the last uncompressed record this thread read
  uint64_t last_record = 0;
  uint32_t forward_steps = 0;  // reads in a row that went forward from the one before

  ~ThreadState() {
    if (zlib_live) inflateEnd(&zlib);
  }
};

ThreadState& State() {
  thread_local ThreadState state;
  return state;
}

std::atomic<uint64_t> next_reader_id{1};

}  // namespace

uint64_t NewReaderId() { return next_reader_id.fetch_add(1); }

std::string ShardReaderImpl::Where(uint64_t i, const IndexRecord& r, const IndexFrame& f) const {
  std::string s = path() + ": record " + std::to_string(i);
  if (codec() == Codec::kNone) return s + " at offset " + std::to_string(f.file_offset);
  return s + " (" + std::string(CodecName(codec())) + " frame at file offset " +
         std::to_string(f.file_offset) + ", +" + std::to_string(r.offset_in_frame) + ")";
}

// Checks the framed record at `framed` (header, payload, footer) against the index.
Status ShardReaderImpl::CheckRecord(uint64_t i, const IndexRecord& r, const IndexFrame& f,
                                    const char* framed, bool* misplaced) const {
  HeaderCheck header = HeaderCheck::kOk;
  uint64_t length = 0;
  const FramedFault fault =
      CheckFramedRecord(framed, r.length, options_.verify_crc, &header, &length);
  if (fault == FramedFault::kNone) return Status::OK();
  if (fault == FramedFault::kPayload) return DataLoss(Where(i, r, f) + ": payload CRC mismatch");
  if (misplaced != nullptr) *misplaced = true;
  if (fault == FramedFault::kHeader) {
    return DataLoss(Where(i, r, f) + ": " + HeaderFaultReason(header, length, UINT64_MAX));
  }
  return DataLoss(Where(i, r, f) + ": length " + std::to_string(length) +
                  " disagrees with the index (" + std::to_string(r.length) + ")");
}

Status ShardReaderImpl::Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const {
  if (i >= num_records()) {
    return OutOfRange(path() + ": record " + std::to_string(i) + " out of range (" +
                      std::to_string(num_records()) + " records)");
  }
  return index_->Locate(i, record, frame);
}

Status ShardReaderImpl::Read(uint64_t i, std::string* out) const {
  if (i >= num_records()) {
    return OutOfRange(path() + ": record " + std::to_string(i) + " out of range (" +
                      std::to_string(num_records()) + " records)");
  }
  if (const RealignedIndex* realigned = this->realigned()) return ReadRealigned(*realigned, i, out);
  bool misplaced = false;
  Status s = ReadThrough(*index_, id_, i, i, out, &misplaced);
  if (s.ok() || !Realigns(s, misplaced)) return s;
  SLUICE_ASSIGN_OR_RETURN(const RealignedIndex* realigned, Realign(s));
  return ReadRealigned(*realigned, i, out);
}

Status ShardReaderImpl::ReadThrough(const IndexLookup& index, uint64_t cache_id, uint64_t i,
                                    uint64_t entry, std::string* out, bool* misplaced) const {
  IndexRecord r;
  IndexFrame f;
  SLUICE_RETURN_IF_ERROR(index.Locate(entry, &r, &f));
  if (r.length > options_.max_record_bytes) {
    return ResourceExhausted(Where(i, r, f) + ": record length " + std::to_string(r.length) +
                             " exceeds max_record_bytes " +
                             std::to_string(options_.max_record_bytes));
  }
  if (codec() == Codec::kNone) return ReadUncompressed(i, r, f, out, misplaced);
  Result<ByteView> frame =
      DecodedFramePrefix(cache_id, r.frame, f, r.offset_in_frame + r.length + kRecordOverheadBytes);
  if (!frame.ok()) {
    *misplaced = true;
    return frame.status();
  }
  const char* framed = frame->data() + r.offset_in_frame;
  SLUICE_RETURN_IF_ERROR(CheckRecord(i, r, f, framed, misplaced));
  out->assign(framed + kRecordHeaderBytes, r.length);
  return Status::OK();
}

Result<const RealignedIndex*> ShardReaderImpl::Realign(const Status& failure) const {
  std::call_once(realign_once_, [&] {
    auto realigned = ReindexAndAlign(fs_, path(), *index_, failure, SequentialReadOptions(options_),
                                     std::max<uint64_t>(1, options_.chunk_bytes));
    if (!realigned.ok()) {
      realign_error_ = realigned.status();
      return;
    }
    realigned_ = std::move(*realigned);
    realigned_active_->store(realigned_.get(), std::memory_order_release);
  });
  if (realigned_ == nullptr) {
    return Status(failure.code(), failure.message() + "; re-indexing the shard after it failed: " +
                                      realign_error_.message());
  }
  return realigned_.get();
}

Status ShardReaderImpl::LostError(const RealignedIndex& realigned, uint64_t i) const {
  return DataLoss(path() + ": record " + std::to_string(i) +
                  " is lost: the shard holds no record for it: " + realigned.description);
}

Status ShardReaderImpl::ReadRealigned(const RealignedIndex& realigned, uint64_t i,
                                      std::string* out) const {
  const uint64_t record = realigned.map[i];
  if (record == kPositionLost) return LostError(realigned, i);
  bool misplaced = false;
  return ReadThrough(*realigned.index, realigned_id_, i, record & ~kRecordMoved, out, &misplaced);
}

Status ShardReaderImpl::ReadUncompressed(uint64_t i, const IndexRecord& r, const IndexFrame& f,
                                         std::string* out, bool* misplaced) const {
  const uint64_t framed = r.length + kRecordOverheadBytes;
  if (r.offset_in_frame + framed > f.file_bytes) {  // frames lie within the checked file size
    *misplaced = true;
    return DataLoss(Where(i, r, f) + ": the index places the record outside its frame");
  }
  const uint64_t at = f.file_offset + r.offset_in_frame;
  ByteView buffered = ReadAhead(i, at, framed);
  if (!buffered.empty()) {
    SLUICE_RETURN_IF_ERROR(CheckRecord(i, r, f, buffered.data(), misplaced));
    out->assign(buffered.data() + kRecordHeaderBytes, r.length);
    return Status::OK();
  }
  out->resize(framed);
  SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(at, framed, out->data()));
  if (got.size() != framed) {
    *misplaced = true;
    return DataLoss(Where(i, r, f) + ": truncated record (the shard ends " +
                    std::to_string(framed - got.size()) + " bytes early)");
  }
  SLUICE_RETURN_IF_ERROR(CheckRecord(i, r, f, got.data(), misplaced));
  if (got.data() == out->data()) {
    out->erase(0, kRecordHeaderBytes);  // the file read straight into *out
    out->resize(r.length);
  } else {
    out->assign(got.data() + kRecordHeaderBytes, r.length);  // a view of file-owned memory
  }
  return Status::OK();
}

ByteView ShardReaderImpl::ReadAhead(uint64_t i, uint64_t at, uint64_t framed) const {
  ThreadState& t = State();
  const bool forward =
      t.last_reader_id == id_ && i > t.last_record && i - t.last_record <= kForwardRecords;
  t.forward_steps = forward ? t.forward_steps + 1 : 0;
  t.last_reader_id = id_;
  t.last_record = i;
  auto held = [&] {
    return t.ahead_reader_id == id_ && at >= t.ahead_offset &&
           at + framed <= t.ahead_offset + t.ahead.size();
  };
  if (held()) return ByteView(t.ahead).substr(at - t.ahead_offset, framed);
  // Two forward steps in a row: a pass, not the chance neighbour of a random read.
  if (t.forward_steps < 2 || framed >= kReadAheadBytes || at >= file_->size()) return ByteView();
  t.ahead_reader_id = 0;  // invalid while reading
  t.ahead.resize(std::min(kReadAheadBytes, file_->size() - at));
  Result<ByteView> got = file_->Read(at, t.ahead.size(), t.ahead.data());
  // An error, or file-owned memory (a mapped file, read in place): the record's own read.
  if (!got.ok() || got->data() != t.ahead.data()) return ByteView();
  t.ahead.resize(got->size());  // short when the file shrank: the record's own read says so
  t.ahead_reader_id = id_;
  t.ahead_offset = at;
  return held() ? ByteView(t.ahead).substr(0, framed) : ByteView();
}

// The first `need` bytes of frame `frame` decoded, from this thread's cache when possible.
Result<ByteView> ShardReaderImpl::DecodedFramePrefix(uint64_t cache_id, uint32_t frame,
                                                     const IndexFrame& f, uint64_t need) const {
  ThreadState& t = State();
  if (t.reader_id != cache_id || t.frame != frame || (t.data.size() < need && t.error.ok())) {
    t.reader_id = 0;  // invalid while decoding
    uint64_t target = f.uncompressed_bytes <= kWholeFrameBytes ? f.uncompressed_bytes : need;
    t.error = Decode(f, target, &t.data);
    t.reader_id = cache_id;
    t.frame = frame;
  }
  // Damage further on in the frame does not concern the records decoded before it: they are
  // served (their CRCs are checked like any other's), so a bit flip in a gzip shard, which is
  // one frame, costs the records after it, not the whole shard.
  if (t.data.size() >= need) return ByteView(t.data);
  return t.error;
}

// Decodes the first `need` bytes of a zstd frame group or gzip stream into *out. Beyond
// kWholeFrameBytes the buffer grows only as bytes are produced, so an index that lies
// about sizes cannot make the reader allocate what the file does not hold. On an error
// *out holds the bytes decoded before it.
Status ShardReaderImpl::Decode(const IndexFrame& f, uint64_t need, std::string* out) const {
  size_t produced = 0;
  Status s = DecodeInto(f, need, out, &produced);
  out->resize(std::min(out->size(), produced));
  return s;
}

Status ShardReaderImpl::DecodeInto(const IndexFrame& f, uint64_t need, std::string* out,
                                   size_t* produced_out) const {
  ThreadState& t = State();
  out->resize(static_cast<size_t>(std::min(need, kWholeFrameBytes)));
  size_t& produced = *produced_out;
  auto grow_if_full = [&] {
    if (produced == out->size() && out->size() < need) {
      out->resize(static_cast<size_t>(std::min<uint64_t>(need, 2 * out->size())));
    }
  };
  uint64_t read = 0;
  if (codec() == Codec::kZstd) {
    if (!t.zstd) return ResourceExhausted("ZSTD_createDCtx failed");
    ZSTD_DCtx_reset(t.zstd.get(), ZSTD_reset_session_only);
  } else if (!t.zlib_live) {
    if (inflateInit2(&t.zlib, 15 + 16) != Z_OK) return Internal("inflateInit2 failed");
    t.zlib_live = true;
  } else {
    inflateReset(&t.zlib);
  }
  while (produced < need && read < f.file_bytes) {
    // A frame small enough to decode whole is read whole, which lets zstd decode it in one
    // pass straight into *out.
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(
        f.file_bytes - read, need == f.uncompressed_bytes ? kWholeFrameBytes : kInputChunkBytes));
    t.input.resize(std::max(t.input.size(), chunk));
    SLUICE_ASSIGN_OR_RETURN(ByteView in, file_->Read(f.file_offset + read, chunk, t.input.data()));
    if (in.size() != chunk) break;
    read += chunk;
    if (codec() == Codec::kZstd) {
      ZSTD_inBuffer zin{in.data(), in.size(), 0};
      while (zin.pos < zin.size && produced < need) {
        grow_if_full();
        ZSTD_outBuffer zout{out->data() + produced, out->size() - produced, 0};
        size_t rc = ZSTD_decompressStream(t.zstd.get(), &zout, &zin);
        if (ZSTD_isError(rc)) {
          return DataLoss(path() + ": zstd frame at file offset " + std::to_string(f.file_offset) +
                          ": corrupt zstd frame: " + ZSTD_getErrorName(rc));
        }
        produced += zout.pos;
        if (zout.pos == 0 && rc != 0 && zin.pos < zin.size) break;  // no progress
      }
    } else {
      SLUICE_RETURN_IF_ERROR(Inflate(f, in, need, out, &produced));
    }
  }
  if (produced < need) {
    return DataLoss(path() + ": " + std::string(CodecName(codec())) + " frame at file offset " +
                    std::to_string(f.file_offset) + " decodes to " + std::to_string(produced) +
                    " bytes, fewer than the index says (" + std::to_string(need) + ")");
  }
  return Status::OK();
}

Status ShardReaderImpl::Inflate(const IndexFrame& f, ByteView in, uint64_t need, std::string* out,
                                size_t* produced) const {
  z_stream* z = &State().zlib;
  while (!in.empty() && *produced < need) {
    if (*produced == out->size()) {
      out->resize(static_cast<size_t>(std::min<uint64_t>(need, 2 * out->size())));
    }
    z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z->avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT_MAX));
    z->next_out = reinterpret_cast<Bytef*>(out->data() + *produced);
    z->avail_out = static_cast<uInt>(std::min<size_t>(out->size() - *produced, UINT_MAX));
    int rc = inflate(z, Z_NO_FLUSH);
    in.remove_prefix(reinterpret_cast<const char*>(z->next_in) - in.data());
    *produced = reinterpret_cast<char*>(z->next_out) - out->data();
    if (rc == Z_STREAM_END) {
      inflateReset(z);  // another gzip member may follow
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return DataLoss(path() + ": corrupt gzip stream in frame at file offset " +
                      std::to_string(f.file_offset) + ": " + (z->msg ? z->msg : "inflate error"));
    } else if (rc == Z_BUF_ERROR) {
      break;
    }
  }
  return Status::OK();
}

namespace {

// How many records `listed` (the shard's own index, which no longer matches it) had beyond
// those `recovered` holds: known only when the two agree on every recovered record (a shard
// cut short under its index); 0 otherwise (an index of another shard says nothing).
uint64_t RecordsLost(const IndexLookup* listed, const ShardIndex& recovered) {
  if (listed == nullptr || listed->num_records() <= recovered.num_records()) return 0;
  if (listed->codec() != recovered.codec()) return 0;
  IndexRecord r;
  IndexFrame f;
  for (uint64_t i = 0; i < recovered.num_records(); ++i) {
    if (!listed->Locate(i, &r, &f).ok() || r.length != recovered.records()[i].length) return 0;
  }
  return listed->num_records() - recovered.num_records();
}

}  // namespace

Result<std::unique_ptr<ShardReader>> ShardReader::Open(io::FileSystem* fs, const std::string& path,
                                                       const ShardReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(path));
  OpenedIndex opened = OpenShardIndex(fs, *file, options);
  std::optional<ShardDamage> damage;
  if (!opened.problem.ok()) {
    if (opened.problem.code() != StatusCode::kDataLoss ||
        options.on_damage != ShardDamagePolicy::kRecover) {
      return opened.problem;
    }
    damage = ShardDamage{opened.problem, {}, 0};
    SLUICE_ASSIGN_OR_RETURN(
        ShardIndex recovered,
        ShardIndex::Recover(fs, path, &damage->lost, SequentialReadOptions(options)));
    damage->records_lost = RecordsLost(opened.index.get(), recovered);
    opened.index =
        NewInMemoryIndexLookup(std::move(recovered), std::max<uint64_t>(1, options.chunk_bytes));
  }
  return std::unique_ptr<ShardReader>(std::make_unique<ShardReaderImpl>(
      fs, std::move(file), std::move(opened.index), options, std::move(damage)));
}

}  // namespace sluice::format

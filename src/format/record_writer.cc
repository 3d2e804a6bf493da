// RecordWriter: TFRecord framing into a none, gzip or zstd shard, plus its index.
// The three codecs share one path: framed records gather in `pending_`, and a codec-specific
// flush hands them to the file (as is, through deflate, or as one independent zstd frame).
#include "sluice/format/record_writer.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <vector>

#include "format/framing.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {
namespace {

// none and gzip: framed bytes buffered before one Append / deflate call. Large enough to
// amortize system calls, small enough to stay in cache.
constexpr size_t kFlushBytes = size_t{1} << 20;
// none: a record at least this large is appended straight from the caller's buffer.
constexpr size_t kDirectAppendBytes = size_t{256} << 10;

struct ZstdCCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
// A zlib deflate stream. Lives inside the (heap-allocated, never moved) writer because zlib
// keeps a pointer back to its z_stream.
struct ZlibDeflater {
  z_stream z{};
  bool live = false;
  ~ZlibDeflater() {
    if (live) deflateEnd(&z);
  }
};

class RecordWriterImpl final : public RecordWriter {
 public:
  RecordWriterImpl(io::FileSystem* fs, std::unique_ptr<io::WritableFile> file,
                   const RecordWriterOptions& options)
      : fs_(fs), file_(std::move(file)), options_(options) {}

  // Destroying an unclosed writer aborts: the WritableFile removes its temporary.
  ~RecordWriterImpl() override = default;

  Status Init();
  Status Write(ByteView record) override;
  Status Close() override;

  uint64_t records_written() const override { return records_; }
  uint64_t framed_bytes() const override { return framed_bytes_; }
  uint64_t file_bytes() const override {
    // Uncompressed bytes reach the file unchanged, so count them while still buffered.
    return file_bytes_ + (options_.codec == Codec::kNone ? pending_.size() : 0);
  }
  const std::string& path() const override { return file_->path(); }

 private:
  Status Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
    return status_;
  }
  void AddIndexEntry(uint64_t length);
  Status WriteDirect(ByteView record);
  Status Flush();
  Status WriteZstdFrame();
  Status Deflate(ByteView in, int flush);
  Status Append(ByteView bytes) {
    file_bytes_ += bytes.size();
    return file_->Append(bytes);
  }
  Status Finish();
  Status WriteIndex();

  io::FileSystem* fs_;
  std::unique_ptr<io::WritableFile> file_;
  RecordWriterOptions options_;
  std::string pending_;     // framed records not yet handed to the file
  std::string compressed_;  // compressor output, reused
  std::unique_ptr<ZSTD_CCtx, ZstdCCtxDeleter> zstd_;
  ZlibDeflater zlib_;
  uint64_t records_ = 0;
  uint64_t framed_bytes_ = 0;
  uint64_t file_bytes_ = 0;  // handed to file_ (counted here: any FileSystem will do)
  std::vector<IndexFrame> frames_;
  std::vector<IndexRecord> index_records_;
  bool closed_ = false;
  Status status_;  // sticky: the first error wins
};

Status RecordWriterImpl::Init() {
  if (options_.codec == Codec::kZstd) {
    if (options_.zstd_level < ZSTD_minCLevel() || options_.zstd_level > ZSTD_maxCLevel()) {
      return InvalidArgument("zstd_level " + std::to_string(options_.zstd_level) + " out of range");
    }
    if (options_.zstd_frame_bytes == 0) return InvalidArgument("zstd_frame_bytes must be > 0");
    zstd_.reset(ZSTD_createCCtx());
    if (!zstd_) return ResourceExhausted("ZSTD_createCCtx failed");
    ZSTD_CCtx_setParameter(zstd_.get(), ZSTD_c_compressionLevel, options_.zstd_level);
    ZSTD_CCtx_setParameter(zstd_.get(), ZSTD_c_contentSizeFlag, 1);
    // A frame checksum (XXH64 of the content, as the zstd CLI writes by default) makes any
    // damage to a frame detectable, so a reader can drop a damaged frame whole.
    ZSTD_CCtx_setParameter(zstd_.get(), ZSTD_c_checksumFlag, 1);
  } else if (options_.codec == Codec::kGzip) {
    if (options_.gzip_level < -1 || options_.gzip_level > 9) {
      return InvalidArgument("gzip_level " + std::to_string(options_.gzip_level) + " out of range");
    }
    // windowBits 15 + 16: a gzip wrapper, which is what TFRecordOptions("GZIP") writes.
    if (deflateInit2(&zlib_.z, options_.gzip_level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      return Internal("deflateInit2 failed");
    }
    zlib_.live = true;
    compressed_.resize(kFlushBytes / 4);
  }
  return Status::OK();
}

void RecordWriterImpl::AddIndexEntry(uint64_t length) {
  if (!options_.write_index) return;
  uint64_t framed = length + kRecordOverheadBytes;
  switch (options_.codec) {
    case Codec::kNone:
      frames_.push_back({framed_bytes_, framed, framed});
      index_records_.push_back({static_cast<uint32_t>(frames_.size() - 1), 0, length});
      break;
    case Codec::kGzip:
      index_records_.push_back({0, framed_bytes_, length});
      break;
    case Codec::kZstd:
      index_records_.push_back({static_cast<uint32_t>(frames_.size()), pending_.size(), length});
      break;
  }
}

Status RecordWriterImpl::Write(ByteView record) {
  if (!status_.ok()) return status_;
  if (closed_) return Fail(FailedPrecondition("write to closed writer " + path()));
  const uint64_t framed = record.size() + kRecordOverheadBytes;
  const bool zstd = options_.codec == Codec::kZstd;
  if (zstd && !pending_.empty() && pending_.size() + framed > options_.zstd_frame_bytes) {
    SLUICE_RETURN_IF_ERROR(Fail(WriteZstdFrame()));  // records never straddle frames
  }
  if (frames_.size() >= UINT32_MAX) {  // IndexRecord::frame is 32 bits
    return Fail(ResourceExhausted(path() + ": too many frames for the index"));
  }
  AddIndexEntry(record.size());
  if (!zstd && record.size() >= kDirectAppendBytes) {
    SLUICE_RETURN_IF_ERROR(Fail(WriteDirect(record)));
  } else {
    AppendFramedRecord(record, &pending_);
  }
  ++records_;
  framed_bytes_ += framed;
  size_t threshold = zstd ? options_.zstd_frame_bytes : kFlushBytes;
  if (pending_.size() >= threshold) SLUICE_RETURN_IF_ERROR(Fail(Flush()));
  return Status::OK();
}

// none / gzip: a large record goes to the codec from the caller's buffer, no copy.
Status RecordWriterImpl::WriteDirect(ByteView record) {
  SLUICE_RETURN_IF_ERROR(Flush());
  char header[kRecordHeaderBytes];
  EncodeRecordHeader(record.size(), header);
  char footer[kRecordFooterBytes];
  EncodeFixed32(footer, crc32c::Mask(crc32c::Value(record.data(), record.size())));
  for (ByteView piece : {ByteView(header, sizeof header), record, ByteView(footer, 4)}) {
    if (options_.codec == Codec::kNone) {
      SLUICE_RETURN_IF_ERROR(Append(piece));
    } else {
      SLUICE_RETURN_IF_ERROR(Deflate(piece, Z_NO_FLUSH));
    }
  }
  return Status::OK();
}

Status RecordWriterImpl::Flush() {
  if (pending_.empty()) return Status::OK();
  switch (options_.codec) {
    case Codec::kNone:
      SLUICE_RETURN_IF_ERROR(Append(pending_));
      break;
    case Codec::kGzip:
      SLUICE_RETURN_IF_ERROR(Deflate(pending_, Z_NO_FLUSH));
      break;
    case Codec::kZstd:
      return WriteZstdFrame();
  }
  pending_.clear();
  return Status::OK();
}

// Compresses pending_ (whole records only) into one independent frame with its content
// size set, so a reader can decompress it alone, in one shot, into an exact buffer.
Status RecordWriterImpl::WriteZstdFrame() {
  compressed_.resize(ZSTD_compressBound(pending_.size()));
  size_t n = ZSTD_compress2(zstd_.get(), compressed_.data(), compressed_.size(), pending_.data(),
                            pending_.size());
  if (ZSTD_isError(n)) {
    return Internal(path() + ": zstd compression failed: " + ZSTD_getErrorName(n));
  }
  if (options_.write_index) frames_.push_back({file_bytes_, n, pending_.size()});
  pending_.clear();
  return Append(ByteView(compressed_.data(), n));
}

Status RecordWriterImpl::Deflate(ByteView in, int flush) {
  z_stream* z = &zlib_.z;
  // zlib's avail_in is 32 bits; feed large inputs in slices.
  constexpr size_t kMaxSlice = size_t{1} << 30;
  do {
    size_t slice = std::min(in.size(), kMaxSlice);
    z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z->avail_in = static_cast<uInt>(slice);
    int mode = slice == in.size() ? flush : Z_NO_FLUSH;
    int rc;
    do {
      z->next_out = reinterpret_cast<Bytef*>(compressed_.data());
      z->avail_out = static_cast<uInt>(compressed_.size());
      rc = deflate(z, mode);
      if (rc == Z_STREAM_ERROR) return Internal(path() + ": deflate failed");
      size_t produced = compressed_.size() - z->avail_out;
      if (produced > 0) SLUICE_RETURN_IF_ERROR(Append(ByteView(compressed_.data(), produced)));
    } while (z->avail_out == 0 || (mode == Z_FINISH && rc != Z_STREAM_END));
    in.remove_prefix(slice);
  } while (!in.empty());
  return Status::OK();
}

Status RecordWriterImpl::Finish() {
  switch (options_.codec) {
    case Codec::kNone:
      return Flush();
    case Codec::kGzip:
      SLUICE_RETURN_IF_ERROR(Deflate(pending_, Z_FINISH));
      pending_.clear();
      if (options_.write_index) frames_.push_back({0, file_bytes_, framed_bytes_});
      return Status::OK();
    case Codec::kZstd:
      // An empty shard still gets one (empty) frame, so its codec is detectable and
      // `zstd -dc` accepts it.
      if (pending_.empty() && file_bytes_ > 0) return Status::OK();
      return WriteZstdFrame();
  }
  return Status::OK();
}

Status RecordWriterImpl::WriteIndex() {
  ShardIndex index(options_.codec, std::move(frames_), std::move(index_records_));
  SLUICE_ASSIGN_OR_RETURN(auto out,
                          fs_->OpenForWrite(ShardIndex::IndexPathFor(path()), options_.file));
  SLUICE_RETURN_IF_ERROR(out->Append(index.Serialize()));
  return out->Close();
}

Status RecordWriterImpl::Close() {
  if (closed_) return status_;
  closed_ = true;
  if (status_.ok()) (void)Fail(Finish());
  if (!status_.ok()) {
    file_->Abort();
    return status_;
  }
  SLUICE_RETURN_IF_ERROR(Fail(file_->Close()));
  if (options_.write_index) {
    Status s = WriteIndex();
    if (!s.ok()) {
      // Leave nothing behind rather than a shard whose index silently failed.
      (void)fs_->Delete(path());
      return Fail(s.WithContext("writing index of " + path()));
    }
  }
  return status_;
}

}  // namespace

Result<std::unique_ptr<RecordWriter>> RecordWriter::Open(io::FileSystem* fs,
                                                         const std::string& path,
                                                         const RecordWriterOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForWrite(path, options.file));
  auto writer = std::make_unique<RecordWriterImpl>(fs, std::move(file), options);
  SLUICE_RETURN_IF_ERROR(writer->Init());
  return std::unique_ptr<RecordWriter>(std::move(writer));
}

}  // namespace sluice::format

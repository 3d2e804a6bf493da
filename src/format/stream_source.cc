// The uncompressed and gzip stream sources (zstd: zstd_source.cc).
#include "format/stream_source.h"

#include <zlib.h>

#include <climits>

#include "format/compressed_input.h"

namespace sluice::format {
namespace {

class NoneSource final : public StreamSource {
 public:
  NoneSource(std::unique_ptr<io::RandomAccessFile> file, const StreamSourceOptions& options)
      : file_(std::move(file)),
        read_bytes_(std::max<size_t>(options.reader.read_buffer_bytes, 4096)) {}

  // Maps the file when that is cheap (RecordReaderOptions::map_uncompressed). A file that
  // cannot be mapped after all (a FUSE file system without mmap, ...) is read buffered.
  void MapIfInPlace() {
    if (!file_->MapsInPlace()) return;
    auto mapping = file_->Map();
    if (mapping.ok()) mapping_ = std::move(*mapping);
  }

  Result<FillResult> Fill(StreamWindow* window, size_t want) override {
    uint64_t left = file_->size() - std::min(next_, file_->size());
    if (left == 0) return FillResult::kEnd;
    if (mapping_ != nullptr) {  // the whole file at once, in place
      ByteView all = mapping_->data();
      window->View(all.data(), all.size());
      next_ = all.size();
      return FillResult::kData;
    }
    // Room for a read of read_bytes_, less the bytes of a record cut by the previous read
    // (they move to the front of the buffer): the buffer stays at read_bytes_, not twice.
    size_t held = static_cast<size_t>(window->end() - window->begin());
    size_t read = std::max(want, read_bytes_ - std::min(held, read_bytes_ / 2));
    window->Reserve(static_cast<size_t>(std::min<uint64_t>(read, left)));
    size_t n = static_cast<size_t>(std::min<uint64_t>(window->room(), left));
    SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(next_, n, window->write_ptr()));
    if (got.empty()) {
      return DataLoss(file_->path() + ": file shrank while reading (size was " +
                      std::to_string(file_->size()) + ")");
    }
    if (got.data() != window->write_ptr()) std::memcpy(window->write_ptr(), got.data(), got.size());
    window->Produced(got.size());
    window->Commit();
    next_ += got.size();
    return FillResult::kData;
  }

  std::string Describe(uint64_t stream_offset) const override {
    return "offset " + std::to_string(stream_offset);
  }

 private:
  std::unique_ptr<io::RandomAccessFile> file_;
  size_t read_bytes_;
  std::unique_ptr<io::FileMapping> mapping_;  // when reading in place
  uint64_t next_ = 0;  // file offset = stream offset of the next byte to read
};

// The whole file is one gzip stream (possibly several members, as `gzip -dc` accepts).
// A corrupt deflate stream ends the readable data: deflate has no resync points.
class GzipSource final : public StreamSource {
 public:
  GzipSource(std::unique_ptr<io::RandomAccessFile> file, const StreamSourceOptions& options)
      : file_(std::move(file)),
        options_(options),
        read_bytes_(std::max<size_t>(options.reader.read_buffer_bytes, 4096)),
        input_(file_.get(), read_bytes_) {
    // windowBits 15 + 16: gzip wrapper only (the file starts with the gzip magic).
    live_ = inflateInit2(&z_, 15 + 16) == Z_OK;
  }
  ~GzipSource() override {
    if (live_) inflateEnd(&z_);
  }

  Result<FillResult> Fill(StreamWindow* window, size_t want) override {
    if (!live_) return Internal("inflateInit2 failed");
    if (ended_) return FillResult::kEnd;
    window->Reserve(std::max(std::min(want, kMaxFillReserveBytes), read_bytes_));
    for (;;) {
      SLUICE_RETURN_IF_ERROR(input_.Fill(1));
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input_.data()));
      z_.avail_in = static_cast<uInt>(std::min<size_t>(input_.available(), UINT_MAX));
      z_.next_out = reinterpret_cast<Bytef*>(window->write_ptr());
      z_.avail_out = static_cast<uInt>(std::min<size_t>(window->room(), UINT_MAX));
      int rc = inflate(&z_, Z_NO_FLUSH);
      input_.Consume(reinterpret_cast<const char*>(z_.next_in) - input_.data());
      size_t produced = reinterpret_cast<char*>(z_.next_out) - window->write_ptr();
      window->Produced(produced);
      window->Commit();
      if (rc == Z_STREAM_END) {
        SLUICE_ASSIGN_OR_RETURN(bool another, NextMember());
        if (!another) {
          ended_ = true;
          return produced > 0 ? FillResult::kData : FillResult::kEnd;
        }
      } else if (rc == Z_BUF_ERROR && produced == 0 && input_.available() == 0) {
        return Truncated();  // no progress possible and no input left
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Corrupt(z_.msg != nullptr ? std::string(z_.msg)
                                         : "inflate error " + std::to_string(rc));
      }
      if (produced > 0) return FillResult::kData;
    }
  }

  std::string Describe(uint64_t stream_offset) const override {
    return "offset " + std::to_string(stream_offset) + " of the decompressed gzip stream";
  }

 private:
  // After a member ends: another member follows (true), the file ends (false), or
  // trailing bytes that are not gzip follow (an error, or the end in skip mode).
  Result<bool> NextMember() {
    SLUICE_RETURN_IF_ERROR(input_.Fill(2));
    if (input_.available() == 0) return false;
    if (input_.available() < 2 || std::memcmp(input_.data(), "\x1f\x8b", 2) != 0) {
      auto r = Corrupt("trailing bytes after the gzip stream are not a gzip member");
      if (!r.ok()) return r.status();
      return false;
    }
    inflateReset(&z_);
    return true;
  }

  Result<FillResult> Corrupt(const std::string& why) {
    uint64_t at = input_.offset();
    if (options_.reader.policy == CorruptionPolicy::kStrict) {
      return DataLoss(file_->path() + ": corrupt gzip stream near file offset " +
                      std::to_string(at) + ": " + why);
    }
    skipped_ = SkippedRange{at, file_->size() - at, "corrupt gzip stream: " + why, true};
    ended_ = true;
    return FillResult::kEnd;
  }

  Result<FillResult> Truncated() {
    std::string what = file_->path() + ": truncated gzip stream: the file ends inside a gzip " +
                       "member (file size " + std::to_string(file_->size()) + ")";
    if (options_.reader.policy == CorruptionPolicy::kStrict &&
        !options_.reader.tolerate_torn_tail) {
      return DataLoss(what);
    }
    if (options_.warnings != nullptr) options_.warnings->push_back(what);
    skipped_ = SkippedRange{file_->size(), 0, "truncated gzip stream", true};
    ended_ = true;
    return FillResult::kEnd;
  }

  std::unique_ptr<io::RandomAccessFile> file_;
  StreamSourceOptions options_;
  size_t read_bytes_;
  CompressedInput input_;
  z_stream z_{};
  bool live_ = false;
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<StreamSource> MakeGzipSource(std::unique_ptr<io::RandomAccessFile> file,
                                             const StreamSourceOptions& options) {
  return std::make_unique<GzipSource>(std::move(file), options);
}

Result<std::unique_ptr<StreamSource>> MakeStreamSource(Codec codec,
                                                       std::unique_ptr<io::RandomAccessFile> file,
                                                       const StreamSourceOptions& options) {
  switch (codec) {
    case Codec::kNone: {
      auto source = std::make_unique<NoneSource>(std::move(file), options);
      if (options.reader.map_uncompressed) source->MapIfInPlace();
      return std::unique_ptr<StreamSource>(std::move(source));
    }
    case Codec::kGzip:
      return MakeGzipSource(std::move(file), options);
    case Codec::kZstd:
      return MakeZstdSource(std::move(file), options);
  }
  return Internal("unknown codec");
}

}  // namespace sluice::format

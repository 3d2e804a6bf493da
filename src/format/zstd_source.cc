// The zstd stream source: a shard is a concatenation of standard zstd frames. sluice's
// writer puts whole records in each frame and sets its content size, so the common path
// is one-shot: the whole compressed frame is buffered, the window has room for its content,
// and ZSTD_decompressStream takes its single-pass shortcut straight into the window.
// A frame's output is committed only once the frame decodes completely, so a frame that
// fails is skipped whole (frames larger than kHoldLimit are released as they decode).
#include <zstd.h>
#include <zstd_errors.h>

#include "format/compressed_input.h"
#include "format/framing.h"
#include "format/stream_source.h"

namespace sluice::format {
namespace {

constexpr size_t kHoldLimit = size_t{64} << 20;
// ZSTD_FRAMEHEADERSIZE_MAX, which zstd.h exposes only to static-linking users.
constexpr size_t kFrameHeaderMaxBytes = 18;

struct ZstdDCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

bool IsFrameMagic(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  if (std::memcmp(p, kZstdMagic.data(), 4) == 0) return true;
  return (u[0] & 0xF0) == 0x50 && u[1] == 0x2A && u[2] == 0x4D && u[3] == 0x18;  // skippable
}

class ZstdSource final : public StreamSource {
 public:
  ZstdSource(std::unique_ptr<io::RandomAccessFile> file, const StreamSourceOptions& options)
      : file_(std::move(file)),
        options_(options),
        read_bytes_(std::max<size_t>(options.reader.read_buffer_bytes, 4096)),
        hold_limit_(std::max(kHoldLimit, read_bytes_)),
        input_(file_.get(), read_bytes_),
        dctx_(ZSTD_createDCtx()) {}

  Result<FillResult> Fill(StreamWindow* window, size_t want) override;

  std::string Describe(uint64_t stream_offset) const override {
    std::string s = "offset " + std::to_string(stream_offset);
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      if (it->stream_offset <= stream_offset) {
        return s + " (zstd frame at file offset " + std::to_string(it->file_offset) + ", +" +
               std::to_string(stream_offset - it->stream_offset) + ")";
      }
    }
    return s;
  }

  void Release(uint64_t stream_offset) override {
    if (options_.keep_frames) return;
    while (frames_.size() > 1 && frames_[1].stream_offset <= stream_offset) frames_.pop_front();
  }

  const std::deque<FrameSpan>& frames() const override { return frames_; }

 private:
  Result<bool> StartFrame(StreamWindow* window);
  Status LoadWholeFrame();
  void FinishFrame(StreamWindow* window);
  Result<FillResult> CorruptFrame(StreamWindow* window, const std::string& why);
  Result<FillResult> TruncatedFrame(StreamWindow* window);
  Result<uint64_t> NextFrameStart(uint64_t corrupt_frame_offset);
  std::string FrameName() const {
    return "zstd frame at file offset " + std::to_string(frames_.back().file_offset) +
           " (stream offset " + std::to_string(frames_.back().stream_offset) + ")";
  }

  std::unique_ptr<io::RandomAccessFile> file_;
  StreamSourceOptions options_;
  size_t read_bytes_;
  size_t hold_limit_;
  CompressedInput input_;
  std::unique_ptr<ZSTD_DCtx, ZstdDCtxDeleter> dctx_;
  std::deque<FrameSpan> frames_;  // back() is the current frame while in_frame_
  bool in_frame_ = false;
  bool ended_ = false;
};

Result<StreamSource::FillResult> ZstdSource::Fill(StreamWindow* window, size_t want) {
  if (!dctx_) return ResourceExhausted("ZSTD_createDCtx failed");
  if (ended_) return FillResult::kEnd;
  const uint64_t end_before = window->end();
  for (;;) {
    if (!in_frame_) {
      if (window->end() > end_before) return FillResult::kData;
      SLUICE_ASSIGN_OR_RETURN(bool more, StartFrame(window));
      if (!more) {
        ended_ = true;
        return FillResult::kEnd;
      }
    }
    if (window->room() == 0) {
      window->Reserve(std::max(std::min(want, kMaxFillReserveBytes), read_bytes_));
    }
    ZSTD_inBuffer in{input_.data(), input_.available(), 0};
    ZSTD_outBuffer out{window->write_ptr(), window->room(), 0};
    size_t rc = ZSTD_decompressStream(dctx_.get(), &out, &in);
    input_.Consume(in.pos);
    window->Produced(out.pos);
    if (ZSTD_isError(rc)) return CorruptFrame(window, ZSTD_getErrorName(rc));
    if (rc == 0) {
      FinishFrame(window);
      continue;
    }
    if (window->uncommitted() >= hold_limit_) {
      window->Commit();  // a huge frame: release its output as it decodes
      return FillResult::kData;
    }
    if (in.pos == in.size) {
      SLUICE_RETURN_IF_ERROR(input_.Fill(1));
      if (input_.available() == 0) return TruncatedFrame(window);
    } else if (in.pos == 0 && out.pos == 0 && out.size > 0) {
      return CorruptFrame(window, "the decoder made no progress");
    }
  }
}

// Positions at the next frame and prepares the one-shot path. False at the end of input.
Result<bool> ZstdSource::StartFrame(StreamWindow* window) {
  SLUICE_RETURN_IF_ERROR(input_.Fill(kFrameHeaderMaxBytes));
  if (input_.available() == 0) return false;
  frames_.push_back({input_.offset(), 0, window->end(), 0});
  in_frame_ = true;
  unsigned long long content = ZSTD_getFrameContentSize(input_.data(), input_.available());
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != ZSTD_CONTENTSIZE_ERROR &&
      content <= hold_limit_) {
    window->Reserve(static_cast<size_t>(content));
    SLUICE_RETURN_IF_ERROR(LoadWholeFrame());
  } else {
    window->Reserve(read_bytes_);
  }
  return true;
}

// Buffers the whole compressed frame when its block headers say where it ends (best
// effort: a damaged frame is left to the decoder to report).
Status ZstdSource::LoadWholeFrame() {
  for (;;) {
    size_t size = ZSTD_findFrameCompressedSize(input_.data(), input_.available());
    if (!ZSTD_isError(size)) return Status::OK();
    if (ZSTD_getErrorCode(size) != ZSTD_error_srcSize_wrong || input_.exhausted() ||
        input_.available() >= hold_limit_) {
      return Status::OK();
    }
    SLUICE_RETURN_IF_ERROR(
        input_.Fill(input_.available() + std::max(read_bytes_, input_.available())));
  }
}

void ZstdSource::FinishFrame(StreamWindow* window) {
  window->Commit();
  FrameSpan& f = frames_.back();
  f.file_bytes = input_.offset() - f.file_offset;
  f.stream_bytes = window->end() - f.stream_offset;
  in_frame_ = false;
}

Result<StreamSource::FillResult> ZstdSource::CorruptFrame(StreamWindow* window,
                                                          const std::string& why) {
  if (options_.reader.policy == CorruptionPolicy::kStrict) {
    return DataLoss(file_->path() + ": " + FrameName() + ": corrupt zstd frame: " + why);
  }
  window->Rollback();
  uint64_t start = frames_.back().file_offset;
  frames_.pop_back();
  in_frame_ = false;
  ZSTD_DCtx_reset(dctx_.get(), ZSTD_reset_session_only);
  SLUICE_ASSIGN_OR_RETURN(uint64_t next, NextFrameStart(start));
  skipped_ = SkippedRange{start, next - start, "corrupt zstd frame: " + why, true};
  if (next >= file_->size()) {
    ended_ = true;
    return FillResult::kEnd;
  }
  return FillResult::kGap;
}

// Where decoding resumes after the corrupt frame starting at `start`: its end when its
// block headers are intact and a frame or the end of file follows (the frame is skipped
// exactly), else the next frame magic number after `start`. Leaves the input there.
Result<uint64_t> ZstdSource::NextFrameStart(uint64_t start) {
  input_.Seek(start);
  SLUICE_RETURN_IF_ERROR(input_.Fill(kFrameHeaderMaxBytes));
  SLUICE_RETURN_IF_ERROR(LoadWholeFrame());
  size_t size = ZSTD_findFrameCompressedSize(input_.data(), input_.available());
  if (!ZSTD_isError(size) && size > 0) {
    // Trust the block headers only if another frame (or the end of the file) follows.
    input_.Consume(size);
    SLUICE_RETURN_IF_ERROR(input_.Fill(4));
    if (input_.available() == 0 || (input_.available() >= 4 && IsFrameMagic(input_.data()))) {
      return input_.offset();
    }
  }
  input_.Seek(start + 1);
  for (;;) {
    SLUICE_RETURN_IF_ERROR(input_.Fill(std::max<size_t>(read_bytes_, 4)));
    if (input_.available() < 4) {
      input_.Consume(input_.available());
      return input_.offset();
    }
    const char* p = input_.data();
    size_t n = input_.available();
    for (size_t i = 0; i + 4 <= n; ++i) {
      if (IsFrameMagic(p + i)) {
        input_.Consume(i);
        return input_.offset();
      }
    }
    input_.Consume(n - 3);  // a magic number may straddle the next read
  }
}

Result<StreamSource::FillResult> ZstdSource::TruncatedFrame(StreamWindow* window) {
  std::string what = file_->path() + ": " + FrameName() +
                     ": truncated zstd frame: the file ends inside it (file size " +
                     std::to_string(file_->size()) + ")";
  if (options_.reader.policy == CorruptionPolicy::kStrict && !options_.reader.tolerate_torn_tail) {
    return DataLoss(what);
  }
  // Keep the blocks decoded before the cut: their records are CRC-checked like any other.
  uint64_t start = frames_.back().file_offset;
  FinishFrame(window);
  if (options_.warnings != nullptr) options_.warnings->push_back(what);
  skipped_ = SkippedRange{start, file_->size() - start, "truncated zstd frame", true};
  ended_ = true;
  return FillResult::kEnd;
}

}  // namespace

std::unique_ptr<StreamSource> MakeZstdSource(std::unique_ptr<io::RandomAccessFile> file,
                                             const StreamSourceOptions& options) {
  return std::make_unique<ZstdSource>(std::move(file), options);
}

}  // namespace sluice::format

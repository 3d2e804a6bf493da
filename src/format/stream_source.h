// StreamSource: produces the uncompressed record stream of one shard file (none, gzip or
// zstd) into a StreamWindow, and knows how to name a stream offset in terms of the file
// (docs/format.md, "Offsets in error messages").
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/stream_window.h"
#include "sluice/base/status.h"
#include "sluice/format/record.h"
#include "sluice/format/record_reader.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

// One zstd frame as the reader met it.
struct FrameSpan {
  uint64_t file_offset = 0;
  uint64_t file_bytes = 0;
  uint64_t stream_offset = 0;  // where its output starts in the uncompressed stream
  uint64_t stream_bytes = 0;
};

class StreamSource {
 public:
  enum class FillResult {
    kData,  // committed more bytes to the window
    kGap,   // the current segment ended at unreadable compressed data; more follows
    kEnd,   // the stream ended
  };

  virtual ~StreamSource() = default;

  // Commits more stream bytes to the window (kData), or says the current segment ended
  // (kGap / kEnd; bytes committed during the call still belong to the ending segment).
  // `want` hints how many more bytes the caller needs. Unreadable compressed data is an
  // error in strict mode and a gap (or end) plus a SkippedRange in skip mode.
  virtual Result<FillResult> Fill(StreamWindow* window, size_t want) = 0;

  // "offset 1024" or "offset 1048600 (zstd frame at file offset 35120, +24)".
  virtual std::string Describe(uint64_t stream_offset) const = 0;
  // Bookkeeping for stream bytes before `stream_offset` may be dropped.
  virtual void Release(uint64_t /*stream_offset*/) {}
  // Frames met so far (zstd, when opened with keep_frames; used to build an index).
  virtual const std::deque<FrameSpan>& frames() const {
    static const std::deque<FrameSpan> kNone;
    return kNone;
  }

  // The compressed data skipped at the last kGap / kEnd, if any (reported by the parser
  // once it has finished the bytes before it, to keep skipped() in file order).
  std::optional<SkippedRange> TakeSkipped() { return std::exchange(skipped_, std::nullopt); }

 protected:
  std::optional<SkippedRange> skipped_;
};

// The most a source reserves in the window for one Fill: a header in a tiny compressed
// file may claim a huge record, and the window should grow with the data, not the claim.
inline constexpr size_t kMaxFillReserveBytes = size_t{64} << 20;

struct StreamSourceOptions {
  RecordReaderOptions reader;
  bool keep_frames = false;
  std::vector<std::string>* warnings = nullptr;  // where sources add warnings
};

// Takes ownership of `file`; `codec` says how to decode it.
Result<std::unique_ptr<StreamSource>> MakeStreamSource(Codec codec,
                                                       std::unique_ptr<io::RandomAccessFile> file,
                                                       const StreamSourceOptions& options);
std::unique_ptr<StreamSource> MakeZstdSource(std::unique_ptr<io::RandomAccessFile> file,
                                             const StreamSourceOptions& options);
std::unique_ptr<StreamSource> MakeGzipSource(std::unique_ptr<io::RandomAccessFile> file,
                                             const StreamSourceOptions& options);

}  // namespace sluice::format

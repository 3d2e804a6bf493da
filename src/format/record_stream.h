// RecordStreamReader: the engine behind RecordReader and ShardIndex::Build. It parses the
// TFRecord framing of a StreamSource's uncompressed stream and applies the reader policies
// (strict, skip with resynchronisation, torn tail). docs/format.md, "Reader policies".
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "format/stream_source.h"
#include "format/stream_window.h"
#include "sluice/format/record_reader.h"

namespace sluice::format {

// CRC32C prefix sums of the stream at a fixed stride, so skip-mode resync checks a
// candidate record's payload CRC in O(kStride + log length) rather than O(length): every
// stream byte joins the chain at most once, which keeps resync linear in the file size.
class PrefixCrc {
 public:
  static constexpr uint64_t kStride = 256;

  // CRC32C of the window bytes [a, b), for w.begin() <= a <= b <= w.end(), with the
  // window holding every byte from oldest_needed().
  uint32_t Range(const StreamWindow& w, uint64_t a, uint64_t b);
  // Bytes before `offset` will not be asked about again.
  void Release(uint64_t offset);
  // The lowest stream offset whose bytes the chain still reads (UINT64_MAX if none).
  uint64_t oldest_needed() const { return values_.empty() ? UINT64_MAX : first_; }

 private:
  // CRC32C from the chain start to stream offset x.
  uint32_t At(const StreamWindow& w, uint64_t x);

  uint64_t first_ = 0;           // stream offset of values_[0]
  std::deque<uint32_t> values_;  // CRC32C of [chain start, first_ + k * kStride)
};

class RecordStreamReader final : public RecordReader {
 public:
  // keep_frames: remember every zstd frame (for ShardIndex::Build).
  static Result<std::unique_ptr<RecordStreamReader>> Open(io::FileSystem* fs,
                                                          const std::string& path,
                                                          const RecordReaderOptions& options,
                                                          bool keep_frames = false);
  // Use Open().
  RecordStreamReader(std::string path, Codec codec, const RecordReaderOptions& options);

  Result<bool> Next(ByteView* record) override;
  Codec codec() const override { return codec_; }
  const std::string& path() const override { return path_; }
  uint64_t record_index() const override { return returned_ == 0 ? 0 : returned_ - 1; }
  uint64_t record_offset() const override { return record_offset_; }
  const std::vector<SkippedRange>& skipped() const override { return skipped_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

  const StreamSource& source() const { return *source_; }
  // Stream bytes produced so far (the stream's length once Next() returned false).
  uint64_t stream_bytes() const { return window_.end(); }

 private:
  enum class Parse { kRecord, kEnd, kFault };
  struct Fault {
    std::string reason;
    bool truncated = false;  // the segment ended inside the record
  };

  bool NextBuffered(ByteView* record);
  Result<Parse> ParseAt(uint64_t pos, uint64_t* length, Fault* fault);
  Result<bool> Ensure(uint64_t pos, uint64_t n);
  Result<bool> HandleFault(const Fault& fault);
  bool FinishSegment();
  void ReleaseBefore(uint64_t pos);
  Result<uint64_t> Resync(uint64_t from);
  Result<bool> CandidateAt(uint64_t p);
  std::string Where(uint64_t pos) const { return path_ + ": " + source_->Describe(pos); }

  std::string path_;
  Codec codec_;
  RecordReaderOptions options_;
  uint64_t max_record_bytes_;
  std::unique_ptr<StreamSource> source_;
  StreamWindow window_;
  PrefixCrc prefix_crc_;
  uint64_t pos_ = 0;  // stream offset of the next record
  // Records from pos_ up to this stream offset are whole in the window and intact.
  uint64_t checked_end_ = 0;
  uint64_t returned_ = 0;
  uint64_t record_offset_ = 0;
  bool segment_ended_ = false;
  StreamSource::FillResult segment_end_ = StreamSource::FillResult::kData;
  bool done_ = false;
  Status status_;  // sticky
  std::vector<SkippedRange> skipped_;
  std::vector<std::string> warnings_;
};

}  // namespace sluice::format

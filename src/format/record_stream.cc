// Strict reading and the policies around it; skip-mode resynchronisation is in resync.cc.
#include "format/record_stream.h"

#include "format/framing.h"
#include "sluice/base/crc32c.h"

namespace sluice::format {
namespace {
// Lengths are capped well below 2^64 so that offset arithmetic cannot overflow.
constexpr uint64_t kMaxSaneRecordBytes = uint64_t{1} << 56;
// Bytes of records checked ahead of the caller in one pass: few enough that their headers
// are still in L1 when the records are handed out.
constexpr size_t kScanBytes = size_t{16} << 10;
}  // namespace

RecordStreamReader::RecordStreamReader(std::string path, Codec codec,
                                       const RecordReaderOptions& options)
    : path_(std::move(path)),
      codec_(codec),
      options_(options),
      max_record_bytes_(std::min(options.max_record_bytes, kMaxSaneRecordBytes)) {}

Result<std::unique_ptr<RecordStreamReader>> RecordStreamReader::Open(
    io::FileSystem* fs, const std::string& path, const RecordReaderOptions& options,
    bool keep_frames) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(path));
  char magic[kDetectBytes];
  SLUICE_ASSIGN_OR_RETURN(ByteView head, file->Read(0, sizeof magic, magic));
  Codec codec = DetectShardCodec(head, path);
  auto reader = std::make_unique<RecordStreamReader>(path, codec, options);
  StreamSourceOptions source_options{options, keep_frames, &reader->warnings_};
  SLUICE_ASSIGN_OR_RETURN(reader->source_,
                          MakeStreamSource(codec, std::move(file), source_options));
  return reader;
}

Result<bool> RecordStreamReader::Next(ByteView* record) {
  if (!status_.ok()) return status_;
  if (done_) return false;
  if (NextBuffered(record)) return true;
  for (;;) {
    uint64_t length = 0;
    Fault fault;
    auto parsed = ParseAt(pos_, &length, &fault);
    if (!parsed.ok()) return status_ = parsed.status();
    if (*parsed == Parse::kRecord) {
      *record = ByteView(window_.At(pos_ + kRecordHeaderBytes), length);
      record_offset_ = pos_;
      pos_ += length + kRecordOverheadBytes;
      ++returned_;
      return true;
    }
    if (*parsed == Parse::kEnd) {
      if (FinishSegment()) continue;
      done_ = true;
      return false;
    }
    auto go_on = HandleFault(fault);
    if (!go_on.ok()) return status_ = go_on.status();
    if (!*go_on) {
      done_ = true;
      return false;
    }
  }
}

// The common case, kept lean: the next record lies whole in the window and is intact. The
// records of the window are checked in one pass (ScanIntactRecords) and then handed out.
bool RecordStreamReader::NextBuffered(ByteView* record) {
  if (pos_ >= checked_end_) {
    checked_end_ = pos_ + ScanIntactRecords(window_.At(pos_), window_.end() - pos_,
                                            max_record_bytes_, options_.verify_crc, kScanBytes);
    if (checked_end_ == pos_) return false;  // the general path decides
  }
  const char* header = window_.At(pos_);
  const uint64_t length = DecodeFixed64(header);
  *record = ByteView(header + kRecordHeaderBytes, length);
  record_offset_ = pos_;
  pos_ += length + kRecordOverheadBytes;
  ++returned_;
  return true;
}

// Tries to read the record at stream offset `pos`.
Result<RecordStreamReader::Parse> RecordStreamReader::ParseAt(uint64_t pos, uint64_t* length,
                                                              Fault* fault) {
  SLUICE_ASSIGN_OR_RETURN(bool have, Ensure(pos, kRecordHeaderBytes));
  if (!have) {
    if (window_.end() == pos) return Parse::kEnd;
    *fault = {"truncated record header (" + std::to_string(window_.end() - pos) +
                  " of 12 bytes before the end)",
              true};
    return Parse::kFault;
  }
  HeaderCheck check =
      CheckRecordHeader(window_.At(pos), max_record_bytes_, options_.verify_crc, length);
  if (check != HeaderCheck::kOk) {
    *fault = {HeaderFaultReason(check, *length, max_record_bytes_), false};
    if (pos == 0 && check == HeaderCheck::kLengthCrcMismatch) {
      fault->reason += "; not a TFRecord file?";
    }
    return Parse::kFault;
  }
  SLUICE_ASSIGN_OR_RETURN(have, Ensure(pos, *length + kRecordOverheadBytes));
  if (!have) {
    *fault = {"truncated record: length " + std::to_string(*length) + " needs " +
                  std::to_string(*length + kRecordOverheadBytes) + " bytes, " +
                  std::to_string(window_.end() - pos) + " remain",
              true};
    return Parse::kFault;
  }
  if (options_.verify_crc && !PayloadCrcMatches(window_.At(pos + kRecordHeaderBytes), *length)) {
    *fault = {"payload CRC mismatch", false};
    return Parse::kFault;
  }
  return Parse::kRecord;
}

// Makes stream bytes [pos, pos + n) available. False when the current segment ends first.
Result<bool> RecordStreamReader::Ensure(uint64_t pos, uint64_t n) {
  while (window_.end() - pos < n) {
    if (segment_ended_) return false;
    ReleaseBefore(pos);  // lets the window reuse the space before pos
    uint64_t missing = n - (window_.end() - pos);
    auto filled = source_->Fill(&window_, static_cast<size_t>(missing));
    if (!filled.ok()) {
      const Status& s = filled.status();
      if (s.code() != StatusCode::kDataLoss) return s;
      return DataLoss(s.message() + " (record " + std::to_string(returned_) + ")");
    }
    if (*filled != StreamSource::FillResult::kData) {
      segment_ended_ = true;
      segment_end_ = *filled;
    }
  }
  return true;
}

// A damaged record at pos_: an error (strict), the end of the file (a tolerated torn
// tail), or a resynchronisation (skip). Returns whether reading goes on.
//
// A record cut by the end of the file is ambiguous: a writer that crashed inside its last
// record (a torn tail), or a damaged length field followed by intact records. The bytes
// cannot tell, so a tail is taken for torn only when no intact record starts inside it;
// otherwise strict mode fails (skip mode keeps the intact records, see docs/format.md,
// "Reader policies"): an error is better than silently dropping records that may be good.
Result<bool> RecordStreamReader::HandleFault(const Fault& fault) {
  const bool strict = options_.policy == CorruptionPolicy::kStrict;
  const bool at_eof = segment_ended_ && segment_end_ == StreamSource::FillResult::kEnd;
  const bool maybe_torn = fault.truncated && at_eof;
  const std::string what =
      Where(pos_) + ": " + fault.reason + " (record " + std::to_string(returned_) + ")";
  if (strict && !(maybe_torn && options_.tolerate_torn_tail)) return DataLoss(what);
  SLUICE_ASSIGN_OR_RETURN(uint64_t next, Resync(pos_));
  const bool torn_tail = maybe_torn && next == window_.end();
  if (strict) {
    if (!torn_tail) {
      return DataLoss(what + "; not taken for a torn tail: an intact record starts inside it at " +
                      source_->Describe(next) +
                      " (a damaged length field?); skip mode reads the records after it");
    }
    uint64_t torn = window_.end() - pos_;
    warnings_.push_back(Where(pos_) + ": torn tail: " + fault.reason + "; ignored " +
                        std::to_string(torn) + " bytes");
    skipped_.push_back({pos_, torn, fault.reason});
    if (auto r = source_->TakeSkipped()) skipped_.push_back(*r);
    return false;
  }
  if (torn_tail) warnings_.push_back(Where(pos_) + ": torn tail: " + fault.reason + "; skipped");
  skipped_.push_back({pos_, next - pos_, fault.reason});
  pos_ = next;
  return true;
}

// At the end of a segment: reports what the source skipped there, and says whether
// another segment follows.
bool RecordStreamReader::FinishSegment() {
  if (auto r = source_->TakeSkipped()) skipped_.push_back(*r);
  if (!segment_ended_ || segment_end_ != StreamSource::FillResult::kGap) return false;
  segment_ended_ = false;  // the next Fill starts a new segment; nothing joins across
  return true;
}

void RecordStreamReader::ReleaseBefore(uint64_t pos) {
  prefix_crc_.Release(pos);
  uint64_t keep = std::min(pos, prefix_crc_.oldest_needed());
  window_.Consume(keep);
  source_->Release(keep);
}

Result<std::unique_ptr<RecordReader>> RecordReader::Open(io::FileSystem* fs,
                                                         const std::string& path,
                                                         const RecordReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(auto reader, RecordStreamReader::Open(fs, path, options));
  return std::unique_ptr<RecordReader>(std::move(reader));
}

}  // namespace sluice::format

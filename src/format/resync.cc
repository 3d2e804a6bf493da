// Skip-mode resynchronisation: after a damaged record at `from`, the next record is the
// first offset p > from whose header validates (length CRC, cap, fits before the segment
// ends) AND whose payload CRC validates. Cost (docs/format.md, "Resynchronisation bound"):
// one 8-byte CRC per scanned offset, plus per candidate that passes the length CRC either a
// direct CRC of a short payload or two PrefixCrc lookups; linear in the bytes scanned.
#include "format/framing.h"
#include "format/record_stream.h"
#include "sluice/base/crc32c.h"

namespace sluice::format {
namespace {
// Candidates with payloads up to this size are checked directly; longer ones through
// PrefixCrc, whose lookups cost about this much.
constexpr uint64_t kDirectCrcBytes = 4096;
}  // namespace

uint32_t PrefixCrc::At(const StreamWindow& w, uint64_t x) {
  if (values_.empty() || x < first_) {
    first_ = x;  // a new chain starts here: the CRC of the empty prefix is 0
    values_.assign(1, 0u);
  }
  uint64_t k = (x - first_) / kStride;
  while (values_.size() <= k) {
    uint64_t at = first_ + (values_.size() - 1) * kStride;
    values_.push_back(crc32c::Extend(values_.back(), w.At(at), kStride));
  }
  uint64_t at = first_ + k * kStride;
  return crc32c::Extend(values_[k], w.At(at), x - at);
}

uint32_t PrefixCrc::Range(const StreamWindow& w, uint64_t a, uint64_t b) {
  // crc(prefix || range) = Combine(crc(prefix), crc(range), |range|), and Combine is linear:
  // crc(range) = crc(prefix || range) ^ Combine(crc(prefix), 0, |range|).
  uint32_t to_a = At(w, a);
  uint32_t to_b = At(w, b);
  return to_b ^ crc32c::Combine(to_a, 0, b - a);
}

void PrefixCrc::Release(uint64_t offset) {
  if (values_.empty()) return;
  uint64_t frontier = first_ + (values_.size() - 1) * kStride;
  if (offset > frontier) {
    values_.clear();  // everything chained lies behind; a later chain starts afresh
    return;
  }
  while (values_.size() > 1 && first_ + kStride <= offset) {
    values_.pop_front();
    first_ += kStride;
  }
}

Result<uint64_t> RecordStreamReader::Resync(uint64_t from) {
  for (uint64_t p = from + 1;; ++p) {
    if ((p & 0xFFF) == 0) ReleaseBefore(p);  // the window need not keep what the scan passed
    SLUICE_ASSIGN_OR_RETURN(bool have, Ensure(p, kRecordHeaderBytes));
    if (!have) return window_.end();  // nothing valid before the segment ends
    SLUICE_ASSIGN_OR_RETURN(bool valid, CandidateAt(p));
    if (valid) return p;
  }
}

Result<bool> RecordStreamReader::CandidateAt(uint64_t p) {
  uint64_t length = 0;
  if (CheckRecordHeader(window_.At(p), max_record_bytes_, /*verify_crc=*/true, &length) !=
      HeaderCheck::kOk) {
    return false;
  }
  SLUICE_ASSIGN_OR_RETURN(bool fits, Ensure(p, length + kRecordOverheadBytes));
  if (!fits) return false;
  const uint64_t a = p + kRecordHeaderBytes;
  const uint64_t b = a + length;
  uint32_t expected = crc32c::Unmask(DecodeFixed32(window_.At(b)));
  uint32_t actual = length <= kDirectCrcBytes ? crc32c::Value(window_.At(a), length)
                                              : prefix_crc_.Range(window_, a, b);
  return actual == expected;
}

}  // namespace sluice::format

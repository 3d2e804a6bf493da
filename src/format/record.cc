// Codec names and detection, and the TFRecord framing of one record (docs/format.md).
#include "sluice/format/record.h"

#include <cstring>

#include "format/framing.h"
#include "sluice/base/bytes.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/record_writer.h"

namespace sluice::format {

std::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kNone:
      return "none";
    case Codec::kGzip:
      return "gzip";
    case Codec::kZstd:
      return "zstd";
  }
  return "unknown";
}

Result<Codec> ParseCodec(std::string_view name) {
  if (name == "none" || name == "") return Codec::kNone;
  if (name == "gzip" || name == "gz") return Codec::kGzip;
  if (name == "zstd" || name == "zst") return Codec::kZstd;
  return InvalidArgument("unknown codec \"" + std::string(name) +
                         "\" (expected none, gzip or zstd)");
}

std::string_view CodecExtension(Codec codec) {
  switch (codec) {
    case Codec::kNone:
      return "";
    case Codec::kGzip:
      return ".gz";
    case Codec::kZstd:
      return ".zst";
  }
  return "";
}

namespace {
bool StartsWithValidHeader(std::string_view bytes) {
  uint64_t length;
  return bytes.size() >= kRecordHeaderBytes &&
         CheckRecordHeader(bytes.data(), UINT64_MAX, true, &length) == HeaderCheck::kOk;
}
}  // namespace

Codec DetectCodec(std::string_view first_bytes) {
  // A TFRecord whose first length starts 1f 8b would otherwise pass for gzip.
  if (StartsWithValidHeader(first_bytes)) return Codec::kNone;
  auto starts_with = [&](std::string_view magic) {
    return first_bytes.substr(0, magic.size()) == magic;
  };
  if (starts_with(kGzipMagic)) return Codec::kGzip;
  if (starts_with(kZstdMagic)) return Codec::kZstd;
  return Codec::kNone;
}

Codec DetectShardCodec(std::string_view first_bytes, std::string_view path) {
  Codec codec = DetectCodec(first_bytes);
  if (codec != Codec::kNone || StartsWithValidHeader(first_bytes)) return codec;
  for (Codec named : {Codec::kGzip, Codec::kZstd}) {
    std::string_view ext = CodecExtension(named);
    if (path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext) return named;
  }
  return codec;
}

void AppendFramedRecord(ByteView payload, std::string* out) {
  size_t at = out->size();
  out->resize(at + kRecordHeaderBytes + payload.size() + kRecordFooterBytes);
  EncodeFramedRecord(payload, out->data() + at);
}

void EncodeRecordHeader(uint64_t length, char* dst) {
  EncodeFixed64(dst, length);
  EncodeFixed32(dst + 8, crc32c::Mask(Crc32c(dst, 8)));
}

void EncodeFramedRecord(ByteView payload, char* dst) {
  EncodeRecordHeader(payload.size(), dst);
  if (!payload.empty()) std::memcpy(dst + kRecordHeaderBytes, payload.data(), payload.size());
  EncodeFixed32(dst + kRecordHeaderBytes + payload.size(),
                crc32c::Mask(Crc32c(payload.data(), payload.size())));
}

namespace {
constexpr size_t kInlineCrcBytes = 192;  // measured: ISA-L is faster above ~200 bytes

uint32_t Crc32cPortable(const char* p, size_t n) { return crc32c::Value(p, n); }

// A record's two CRC checks with ShortCrc inline: its header's (of the length), and its
// payload's (ISA-L past kInlineCrcBytes). Shared by ScanIntact and CheckFramed.
template <uint32_t (*ShortCrc)(const char*, size_t)>
[[gnu::always_inline]] inline bool HeaderCrcOk(const char* header) {
  return crc32c::Unmask(DecodeFixed32(header + 8)) == ShortCrc(header, 8);
}
template <uint32_t (*ShortCrc)(const char*, size_t)>
[[gnu::always_inline]] inline bool PayloadCrcOk(const char* payload, uint64_t length) {
  const uint32_t crc =
      length <= kInlineCrcBytes ? ShortCrc(payload, length) : crc32c::Value(payload, length);
  return crc32c::Unmask(DecodeFixed32(payload + length)) == crc;
}

// The loop of ScanIntactRecords. ShortCrc computes the CRC32C of headers and short payloads
// (where a call into ISA-L's dispatcher costs more than the work): instantiated with the
// inline crc32 instruction in a function compiled for SSE4.2, the whole loop is call-free
// except for ISA-L on long payloads.
template <uint32_t (*ShortCrc)(const char*, size_t)>
[[gnu::always_inline]] inline size_t ScanIntact(const char* p, size_t n, uint64_t max_length,
                                                bool verify_crc, size_t stop_after) {
  size_t at = 0;
  while (at < stop_after && n - at >= kRecordOverheadBytes) {
    const char* header = p + at;
    const uint64_t length = DecodeFixed64(header);
    if (length > max_length || length > n - at - kRecordOverheadBytes) break;
    if (verify_crc && (!HeaderCrcOk<ShortCrc>(header) ||
                       !PayloadCrcOk<ShortCrc>(header + kRecordHeaderBytes, length))) {
      break;
    }
    at += length + kRecordOverheadBytes;
  }
  return at;
}

// CheckFramedRecord with ShortCrc inline (as ScanIntact).
template <uint32_t (*ShortCrc)(const char*, size_t)>
[[gnu::always_inline]] inline FramedFault CheckFramed(const char* framed, uint64_t expected,
                                                      bool verify_crc, HeaderCheck* header,
                                                      uint64_t* length) {
  *length = DecodeFixed64(framed);
  if (verify_crc && !HeaderCrcOk<ShortCrc>(framed)) {
    *header = HeaderCheck::kLengthCrcMismatch;
    return FramedFault::kHeader;
  }
  *header = HeaderCheck::kOk;
  if (*length != expected) return FramedFault::kLength;
  if (verify_crc && !PayloadCrcOk<ShortCrc>(framed + kRecordHeaderBytes, expected)) {
    return FramedFault::kPayload;
  }
  return FramedFault::kNone;
}
}  // namespace

#if defined(__x86_64__)
namespace {
__attribute__((target("sse4.2"))) inline uint32_t Crc32cSse42(const char* p, size_t n) {
  uint64_t crc = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    crc = __builtin_ia32_crc32di(crc, v);
  }
  auto c = static_cast<uint32_t>(crc);
  for (; n > 0; ++p, --n) c = __builtin_ia32_crc32qi(c, static_cast<unsigned char>(*p));
  return ~c;
}

__attribute__((target("sse4.2"))) FramedFault CheckFramedSse42(const char* framed,
                                                               uint64_t expected, bool verify_crc,
                                                               HeaderCheck* header,
                                                               uint64_t* length) {
  return CheckFramed<Crc32cSse42>(framed, expected, verify_crc, header, length);
}

__attribute__((target("sse4.2"))) size_t ScanIntactSse42(const char* p, size_t n,
                                                         uint64_t max_length, bool verify_crc,
                                                         size_t stop_after) {
  return ScanIntact<Crc32cSse42>(p, n, max_length, verify_crc, stop_after);
}

// Set when the library loads (a plain load per call, not a guarded static's). A call from
// another library's static initializer before then sees false: the portable path, as right.
const bool kHasSse42 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}();
}  // namespace

uint32_t Crc32c(const char* p, size_t n) {
  if (n <= kInlineCrcBytes && kHasSse42) return Crc32cSse42(p, n);
  return crc32c::Value(p, n);
}

size_t ScanIntactRecords(const char* p, size_t n, uint64_t max_record_bytes, bool verify_crc,
                         size_t stop_after) {
  if (kHasSse42) return ScanIntactSse42(p, n, max_record_bytes, verify_crc, stop_after);
  return ScanIntact<Crc32cPortable>(p, n, max_record_bytes, verify_crc, stop_after);
}

FramedFault CheckFramedRecord(const char* framed, uint64_t expected, bool verify_crc,
                              HeaderCheck* header, uint64_t* length) {
  if (kHasSse42) return CheckFramedSse42(framed, expected, verify_crc, header, length);
  return CheckFramed<Crc32cPortable>(framed, expected, verify_crc, header, length);
}
#else
uint32_t Crc32c(const char* p, size_t n) { return crc32c::Value(p, n); }

FramedFault CheckFramedRecord(const char* framed, uint64_t expected, bool verify_crc,
                              HeaderCheck* header, uint64_t* length) {
  return CheckFramed<Crc32cPortable>(framed, expected, verify_crc, header, length);
}

size_t ScanIntactRecords(const char* p, size_t n, uint64_t max_record_bytes, bool verify_crc,
                         size_t stop_after) {
  return ScanIntact<Crc32cPortable>(p, n, max_record_bytes, verify_crc, stop_after);
}
#endif

HeaderCheck CheckRecordHeader(const char* header, uint64_t max_record_bytes, bool verify_crc,
                              uint64_t* length) {
  *length = DecodeFixed64(header);
  if (verify_crc && crc32c::Unmask(DecodeFixed32(header + 8)) != Crc32c(header, 8)) {
    return HeaderCheck::kLengthCrcMismatch;
  }
  if (*length > max_record_bytes) return HeaderCheck::kTooLong;
  return HeaderCheck::kOk;
}

bool PayloadCrcMatches(const char* payload, uint64_t length) {
  return crc32c::Unmask(DecodeFixed32(payload + length)) == Crc32c(payload, length);
}

std::string HeaderFaultReason(HeaderCheck check, uint64_t length, uint64_t max_record_bytes) {
  if (check == HeaderCheck::kLengthCrcMismatch) return "length CRC mismatch";
  return "record length " + std::to_string(length) + " exceeds max_record_bytes " +
         std::to_string(max_record_bytes);
}

}  // namespace sluice::format

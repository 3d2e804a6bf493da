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
    case Codec::kNone: return "none";
    case Codec::kGzip: return "gzip";
    case Codec::kZstd: return "zstd";
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
    case Codec::kNone: return "";
    case Codec::kGzip: return ".gz";
    case Codec::kZstd: return ".zst";
  }
  return "";
}

Codec DetectCodec(std::string_view first_bytes) {
  auto starts_with = [&](std::string_view magic) {
    return first_bytes.substr(0, magic.size()) == magic;
  };
  if (starts_with(kGzipMagic)) return Codec::kGzip;
  if (starts_with(kZstdMagic)) return Codec::kZstd;
  return Codec::kNone;
}

void AppendFramedRecord(ByteView payload, std::string* out) {
  size_t at = out->size();
  out->resize(at + kRecordHeaderBytes + payload.size() + kRecordFooterBytes);
  EncodeFramedRecord(payload, out->data() + at);
}

void EncodeRecordHeader(uint64_t length, char* dst) {
  EncodeFixed64(dst, length);
  EncodeFixed32(dst + 8, crc32c::Mask(crc32c::Value(dst, 8)));
}

void EncodeFramedRecord(ByteView payload, char* dst) {
  EncodeRecordHeader(payload.size(), dst);
  if (!payload.empty()) std::memcpy(dst + kRecordHeaderBytes, payload.data(), payload.size());
  EncodeFixed32(dst + kRecordHeaderBytes + payload.size(),
                crc32c::Mask(crc32c::Value(payload.data(), payload.size())));
}

HeaderCheck CheckRecordHeader(const char* header, uint64_t max_record_bytes, bool verify_crc,
                              uint64_t* length) {
  *length = DecodeFixed64(header);
  if (verify_crc &&
      crc32c::Unmask(DecodeFixed32(header + 8)) != crc32c::Value(header, 8)) {
    return HeaderCheck::kLengthCrcMismatch;
  }
  if (*length > max_record_bytes) return HeaderCheck::kTooLong;
  return HeaderCheck::kOk;
}

bool PayloadCrcMatches(const char* payload, uint64_t length) {
  return crc32c::Unmask(DecodeFixed32(payload + length)) == crc32c::Value(payload, length);
}

std::string HeaderFaultReason(HeaderCheck check, uint64_t length, uint64_t max_record_bytes) {
  if (check == HeaderCheck::kLengthCrcMismatch) return "length CRC mismatch";
  return "record length " + std::to_string(length) + " exceeds max_record_bytes " +
         std::to_string(max_record_bytes);
}

}  // namespace sluice::format

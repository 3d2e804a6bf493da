// Internal helpers of the TFRecord framing shared by the reader, the writer, the shard
// reader and the index builder. The format itself: docs/format.md, "Record framing".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/base/bytes.h"
#include "sluice/format/record.h"

namespace sluice::format {

inline constexpr std::string_view kGzipMagic("\x1f\x8b", 2);
inline constexpr std::string_view kZstdMagic("\x28\xb5\x2f\xfd", 4);
// Bytes a record occupies in the stream besides its payload.
inline constexpr uint64_t kRecordOverheadBytes = kRecordHeaderBytes + kRecordFooterBytes;

// Writes the 12-byte header (length, masked CRC of the length) to dst.
void EncodeRecordHeader(uint64_t length, char* dst);
// Writes header, payload and footer to dst, which holds payload.size() + 16 bytes.
void EncodeFramedRecord(ByteView payload, char* dst);

enum class HeaderCheck { kOk, kLengthCrcMismatch, kTooLong };

// Decodes the 12-byte header at `header` into *length and checks it: the length CRC first
// (when verify_crc), then the cap. A length CRC mismatch says nothing about *length.
HeaderCheck CheckRecordHeader(const char* header, uint64_t max_record_bytes, bool verify_crc,
                              uint64_t* length);
// Whether the 4-byte footer after payload[0, length) holds the payload's masked CRC.
bool PayloadCrcMatches(const char* payload, uint64_t length);
// "length CRC mismatch", "record length 9999 exceeds max_record_bytes 1024".
std::string HeaderFaultReason(HeaderCheck check, uint64_t length, uint64_t max_record_bytes);

}  // namespace sluice::format

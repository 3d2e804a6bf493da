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

// DetectCodec, except that a file named *.gz / *.zst whose first bytes are neither a magic
// number nor a valid record header is taken to be what its name says: its first frame is
// damaged, and reading it as uncompressed would misreport the damage. first_bytes: up to 12.
Codec DetectShardCodec(std::string_view first_bytes, std::string_view path);
inline constexpr size_t kDetectBytes = kRecordHeaderBytes;

// CRC32C of p[0, n): the crc32 instruction inline for short inputs (record headers, small
// payloads), where a call into ISA-L's dispatcher costs more than the work; ISA-L otherwise.
uint32_t Crc32c(const char* p, size_t n);

enum class HeaderCheck { kOk, kLengthCrcMismatch, kTooLong };

// Decodes the 12-byte header at `header` into *length and checks it: the length CRC first
// (when verify_crc), then the cap. A length CRC mismatch says nothing about *length.
HeaderCheck CheckRecordHeader(const char* header, uint64_t max_record_bytes, bool verify_crc,
                              uint64_t* length);
// Whether the 4-byte footer after payload[0, length) holds the payload's masked CRC.
bool PayloadCrcMatches(const char* payload, uint64_t length);

enum class FramedFault { kNone, kHeader, kLength, kPayload };
// The checks of a framed record that an index says holds `expected` payload bytes, in order:
// its header (CheckRecordHeader's result in *header, the length it holds in *length), that
// length against `expected`, its payload CRC (the CRCs only when verify_crc). The bytes up
// to the footer of an `expected`-byte record must be readable.
// One call per record, the CRCs inline (a shuffled read checks every record it hands out).
FramedFault CheckFramedRecord(const char* framed, uint64_t expected, bool verify_crc,
                              HeaderCheck* header, uint64_t* length);
// The length of a prefix of p[0, n) made of whole records that pass the checks of
// CheckRecordHeader and PayloadCrcMatches (the CRCs only when verify_crc), i.e. that a
// reader may hand out without further checks: the longest such prefix, except that the scan
// ends at the first record boundary at or after `stop_after` (so the caller can hand out the
// records while they are still in cache). The reader's hot loop.
size_t ScanIntactRecords(const char* p, size_t n, uint64_t max_record_bytes, bool verify_crc,
                         size_t stop_after);
// "length CRC mismatch", "record length 9999 exceeds max_record_bytes 1024".
std::string HeaderFaultReason(HeaderCheck check, uint64_t length, uint64_t max_record_bytes);

}  // namespace sluice::format

// Constants and small types of sluice's shard format. The format itself is written down
// as prose in docs/format.md; this header only names its constants.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/base/status.h"

namespace sluice::format {

// TFRecord framing (docs/format.md, "Record framing"):
//   u64 length (LE) | u32 masked crc32c(length bytes) | payload | u32 masked crc32c(payload)
inline constexpr size_t kRecordHeaderBytes = 12;
inline constexpr size_t kRecordFooterBytes = 4;

// Default cap on one record's payload length; a larger length field is treated as corrupt.
inline constexpr uint64_t kDefaultMaxRecordBytes = uint64_t{1} << 30;  // 1 GiB

// How a shard file is compressed (docs/format.md, "Codecs"). Detected from magic bytes on
// read: gzip 1f 8b, zstd 28 b5 2f fd; anything else is read as uncompressed TFRecord.
enum class Codec { kNone, kGzip, kZstd };

std::string_view CodecName(Codec codec);  // "none", "gzip", "zstd"
Result<Codec> ParseCodec(std::string_view name);
// File name suffix after ".tfrecord": "", ".gz", ".zst".
std::string_view CodecExtension(Codec codec);
// Codec of a file from its first bytes (at least 4, better 12, when the file has them: a
// file whose first 12 bytes are a valid TFRecord header is uncompressed whatever they say).
Codec DetectCodec(std::string_view first_bytes);

// What a reader does with a damaged record.
enum class CorruptionPolicy {
  kStrict,  // default: the first fault is an error naming file and byte offset
  kSkip,    // resynchronise at the next valid header, report every skipped range, continue
};

// A byte range a skipping reader jumped over (docs/format.md, "Reader policies").
struct SkippedRange {
  // Offset in the uncompressed record stream (= the file offset for codec none), or, when
  // in_compressed_file, in the compressed file (data that could not be decompressed).
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string reason;               // "payload CRC mismatch", "length CRC mismatch", ...
  bool in_compressed_file = false;  // a corrupt zstd frame, a corrupt or truncated gzip tail
};

}  // namespace sluice::format

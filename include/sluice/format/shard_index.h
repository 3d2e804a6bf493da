// The per-shard index "<shard>.idx": record i -> (frame offset, offset in frame), so any
// record is one read (and, for zstd, one frame decompression) away. Layout: docs/format.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/record.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

struct IndexFrame {
  uint64_t file_offset = 0;        // where the frame starts in the shard file
  uint64_t file_bytes = 0;         // its compressed size in the file
  uint64_t uncompressed_bytes = 0; // its size once decompressed
};

struct IndexRecord {
  uint32_t frame = 0;              // index into frames()
  uint64_t offset_in_frame = 0;    // where the framed record starts inside the frame
  uint64_t length = 0;             // payload length
};

// For codec none there is one frame per record (file offset = record offset).
// For gzip there is one frame: the whole file (random access costs a decompression from
// the start; see docs/format.md).
class ShardIndex {
 public:
  ShardIndex() = default;
  ShardIndex(Codec codec, std::vector<IndexFrame> frames, std::vector<IndexRecord> records)
      : codec_(codec), frames_(std::move(frames)), records_(std::move(records)) {}

  Codec codec() const { return codec_; }
  uint64_t num_records() const { return records_.size(); }
  const std::vector<IndexFrame>& frames() const { return frames_; }
  const std::vector<IndexRecord>& records() const { return records_; }

  std::string Serialize() const;
  // `source` names the file in error messages.
  static Result<ShardIndex> Parse(ByteView data, const std::string& source);

  static std::string IndexPathFor(const std::string& shard_path) { return shard_path + ".idx"; }
  static Result<ShardIndex> Load(io::FileSystem* fs, const std::string& index_path);
  Status Save(io::FileSystem* fs, const std::string& index_path) const;

  // Builds the index by reading the whole shard (strict; every CRC checked).
  static Result<ShardIndex> Build(io::FileSystem* fs, const std::string& shard_path);

 private:
  Codec codec_ = Codec::kNone;
  std::vector<IndexFrame> frames_;
  std::vector<IndexRecord> records_;
};

struct ShardReaderOptions {
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;  // Default: 1 GiB
  bool verify_crc = true;                              // Default: true
  // Build the index in memory when "<shard>.idx" is missing (reads the whole shard once).
  bool build_missing_index = true;                     // Default: true
};

// Random access to the records of one indexed shard.
// Threading: Read() is safe to call concurrently (each call uses the caller's buffers).
class ShardReader {
 public:
  static Result<std::unique_ptr<ShardReader>> Open(io::FileSystem* fs, const std::string& path,
                                                   const ShardReaderOptions& options = {});
  virtual ~ShardReader() = default;

  virtual const std::string& path() const = 0;
  virtual const ShardIndex& index() const = 0;
  uint64_t num_records() const { return index().num_records(); }

  // Reads record i's payload into *out (resized), checking its CRCs. Errors name the
  // shard, record index and byte offset.
  virtual Status Read(uint64_t i, std::string* out) const = 0;
};

}  // namespace sluice::format

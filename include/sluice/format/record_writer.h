// RecordWriter: writes one TFRecord shard file (none, gzip or zstd) and its index.
#pragma once

#include <memory>
#include <string>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/record.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

struct RecordWriterOptions {
  Codec codec = Codec::kZstd;  // Default: zstd
  int zstd_level = 3;          // Default: 3 (zstd's own default)
  // Uncompressed bytes of records gathered into one independent zstd frame. A frame holds
  // whole records only; a single record larger than this gets a frame of its own.
  size_t zstd_frame_bytes = size_t{1} << 20;  // Default: 1 MiB
  int gzip_level = 6;         // Default: 6 (zlib's default)
  bool write_index = true;    // Default: write "<path>.idx" on Close (docs/format.md)
  io::WriteOptions file;      // passed to FileSystem::OpenForWrite
};

// Sticky failure: after the first error every call returns it. Close() is required and
// reports the final status; destroying an unclosed writer aborts (no file appears).
// The shard (and its index) appear under their final names only when Close() succeeds.
// Threading: not thread-safe.
class RecordWriter {
 public:
  static Result<std::unique_ptr<RecordWriter>> Open(io::FileSystem* fs, const std::string& path,
                                                    const RecordWriterOptions& options = {});
  virtual ~RecordWriter() = default;

  virtual Status Write(ByteView record) = 0;
  virtual Status Close() = 0;

  virtual uint64_t records_written() const = 0;
  // Bytes of framed records handed to Write so far (before compression).
  virtual uint64_t framed_bytes() const = 0;
  // Bytes in the file so far (compressed; excludes data still buffered in a pending zstd
  // frame or inside the gzip compressor). For codec none it includes buffered records,
  // which reach the file unchanged.
  virtual uint64_t file_bytes() const = 0;
  virtual const std::string& path() const = 0;
};

// Appends one framed record (header, payload, footer) to `out`. Exposed for tests/tools.
void AppendFramedRecord(ByteView payload, std::string* out);

}  // namespace sluice::format

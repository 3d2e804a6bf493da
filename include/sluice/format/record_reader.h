// RecordReader: reads the records of one shard file in order, whatever its codec.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/record.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

struct RecordReaderOptions {
  CorruptionPolicy policy = CorruptionPolicy::kStrict;  // Default: strict
  // A torn last record (a writer that crashed mid-record) ends the file with a warning
  // instead of an error. Applies to strict mode; skip mode always tolerates it.
  bool tolerate_torn_tail = false;                     // Default: false
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;  // Default: 1 GiB
  size_t read_buffer_bytes = size_t{1} << 20;          // Default: 1 MiB per read call
  bool verify_crc = true;                              // Default: check every CRC
  // Read an uncompressed shard on a file system that maps files in place (local files)
  // through a memory map: records are views of the page cache. Off by default: a file
  // truncated by someone else while it is mapped kills the process with SIGBUS
  // (io::RandomAccessFile::Map), which no error handling can catch; positional reads into a
  // reused buffer turn the same event into a DataLoss error ("file shrank while reading"),
  // and are not reliably slower (docs/format.md, section 9). Default: false
  bool map_uncompressed = false;
};

// Sticky failure: after an error, Next() keeps returning it.
// Threading: not thread-safe; use one reader per thread.
class RecordReader {
 public:
  static Result<std::unique_ptr<RecordReader>> Open(io::FileSystem* fs, const std::string& path,
                                                    const RecordReaderOptions& options = {});
  virtual ~RecordReader() = default;

  // Reads the next record into *record (a view valid until the next call). Returns true
  // for a record, false at the end of the file, or an error (DataLoss for corruption) whose
  // message names the file and byte offset, e.g. "x.tfrecord: offset 1024: payload CRC
  // mismatch (record 7)".
  virtual Result<bool> Next(ByteView* record) = 0;

  virtual Codec codec() const = 0;
  virtual const std::string& path() const = 0;
  // Index of the record last returned (0-based, counting only returned records).
  virtual uint64_t record_index() const = 0;
  // Offset of the record last returned, in the uncompressed record stream.
  virtual uint64_t record_offset() const = 0;
  // Ranges skipped in skip mode (and a torn tail), in file order.
  virtual const std::vector<SkippedRange>& skipped() const = 0;
  // Human-readable warnings (torn tail, ...).
  virtual const std::vector<std::string>& warnings() const = 0;
};

}  // namespace sluice::format

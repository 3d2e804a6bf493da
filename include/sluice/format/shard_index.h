// The per-shard index "<shard>.idx": record i -> (frame offset, offset in frame), so any
// record is one read (and, for zstd, one frame decompression) away. Layout: docs/format.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/record.h"
#include "sluice/format/record_reader.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

struct IndexFrame {
  uint64_t file_offset = 0;         // where the frame starts in the shard file
  uint64_t file_bytes = 0;          // its compressed size in the file
  uint64_t uncompressed_bytes = 0;  // its size once decompressed
};

struct IndexRecord {
  uint32_t frame = 0;            // index into frames()
  uint64_t offset_in_frame = 0;  // where the framed record starts inside the frame
  uint64_t length = 0;           // payload length
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

  // Builds the index by reading the whole shard (strict; every CRC checked). `options`
  // tunes the read (map_uncompressed, read_buffer_bytes, max_record_bytes); its policy is
  // ignored.
  static Result<ShardIndex> Build(io::FileSystem* fs, const std::string& shard_path,
                                  const RecordReaderOptions& options = {});
  // The index of what a damaged shard still holds: the records that read intact when the
  // shard is read in skip mode (docs/format.md, "Recovering a damaged shard"); *lost (if not
  // null) receives the ranges that did not read as records. Records keep their order; an
  // index of a shard with damage has gaps between its frames.
  static Result<ShardIndex> Recover(io::FileSystem* fs, const std::string& shard_path,
                                    std::vector<SkippedRange>* lost,
                                    const RecordReaderOptions& options = {});

 private:
  Codec codec_ = Codec::kNone;
  std::vector<IndexFrame> frames_;
  std::vector<IndexRecord> records_;
};

// Blocks of the index files that ShardReaders read lazily, as stored in the files
// (docs/format.md, "How the reader uses the index"): a cache of fixed size, shared by the
// readers of one pipeline. Threading: safe to share between readers used from many threads.
class IndexBlockCache;
struct ShardChunk;    // shard_chunks.h
struct DecodedChunk;  // shard_chunks.h
// Default capacity of an index block cache: 4 MiB.
inline constexpr uint64_t kDefaultIndexCacheBytes = uint64_t{4} << 20;
std::shared_ptr<IndexBlockCache> NewIndexBlockCache(
    uint64_t capacity_bytes = kDefaultIndexCacheBytes);
// Default memory budget of the directory of one table of a lazily read index: 64 KiB, a
// checkpoint per block of 128 entries up to ~350,000 entries.
inline constexpr uint64_t kDefaultIndexDirectoryBytes = uint64_t{64} << 10;

// Sees index entry i: the record and the frame that holds it.
using IndexEntryVisitor =
    std::function<void(uint64_t i, const IndexRecord& record, const IndexFrame& frame)>;

// What ShardReader::Open does with a shard it cannot open as it is: its index is corrupt,
// empty, of another codec or size (a truncated shard, an index left from an earlier or
// another shard), or it has no index and cannot be indexed (a truncated shard).
enum class ShardDamagePolicy {
  kFail,     // Default: Open fails with the DataLoss error naming the index or shard file
  kRecover,  // Open indexes the shard in memory (ShardIndex::Recover), serves the records
             // that read intact, and ShardReader::damage() says what was wrong and lost.
             // An index that passed the checks at open but does not frame a record where a
             // read (or DecodeChunk) looks is re-indexed the same way, once, while reading:
             // see ShardReader::Read.
};

// What a ShardReader opened with ShardDamagePolicy::kRecover found (docs/format.md,
// "Recovering a damaged shard").
struct ShardDamage {
  Status problem;  // the error Open returns under kFail (names the file and offset)
  // Ranges of the shard that did not read as records (SkippedRange: stream or file offsets).
  std::vector<SkippedRange> lost;
  // Records the shard's index listed beyond those recovered: known when the index itself
  // was intact (a truncated shard); 0 when unknown or none.
  uint64_t records_lost = 0;
  // One line for logs and quarantine files: the problem, the records recovered, what was
  // lost.
  std::string Describe(uint64_t records_recovered) const;
};

struct ShardReaderOptions {
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;  // Default: 1 GiB
  bool verify_crc = true;                              // Default: true
  // Build the index in memory when "<shard>.idx" is missing (reads the whole shard once).
  // Such a reader holds the whole index (~48 bytes per record) for its life; a reader of an
  // index file holds only a sparse directory of it, at most index_directory_bytes per table.
  bool build_missing_index = true;  // Default: true
  // Where the reader keeps the index blocks it reads. Readers of one pipeline share one.
  // Default: null = a cache of kDefaultIndexCacheBytes for this reader alone.
  std::shared_ptr<IndexBlockCache> index_cache;
  // Memory budget of the directory of each of the index's two tables (frames, records): a
  // checkpoint (24 bytes) every M blocks of 128 entries, M the smallest power of two that
  // fits; a lookup missing the cache reads and decodes M blocks. A pipeline splits one
  // dataset-wide budget between its shards (docs/format.md section 7).
  uint64_t index_directory_bytes = kDefaultIndexDirectoryBytes;  // Default: 64 KiB
  ShardDamagePolicy on_damage = ShardDamagePolicy::kFail;        // Default: fail
  // How an uncompressed shard is read when its index is built or recovered (a sequential
  // pass): through a memory map, or (default) positional reads, which turn a file truncated
  // underneath into an error rather than SIGBUS (RecordReaderOptions::map_uncompressed).
  bool map_uncompressed = false;  // Default: false
  // Called by Open for every entry of an index file, in order, as its scan checks them (the
  // record with its frame): a tool comparing the whole index with the shard (`sluice verify`)
  // needs no lookups after. Not called for an index built in memory. Default: none.
  IndexEntryVisitor on_index_entry;
  // Decoded bytes a chunk of the reader's chunk table holds at most (shard_chunks.h), unless
  // one frame is larger. Part of the chunk order's definition. Default: 1 MiB.
  uint64_t chunk_bytes = uint64_t{1} << 20;
};

// Random access to the records of one indexed shard. The index stays on disk: the reader
// keeps a directory of every (128 * M)th entry, M set by index_directory_bytes, and reads
// the blocks of entries it needs through an IndexBlockCache (docs/format.md). Tools that want the
// whole table use ShardIndex::Load. Threading: Read() and Locate() are safe to call concurrently
// (each call uses the caller's buffers).
class ShardReader {
 public:
  static Result<std::unique_ptr<ShardReader>> Open(io::FileSystem* fs, const std::string& path,
                                                   const ShardReaderOptions& options = {});
  virtual ~ShardReader() = default;

  virtual const std::string& path() const = 0;
  virtual Codec codec() const = 0;
  virtual uint64_t num_records() const = 0;
  virtual uint64_t file_bytes() const = 0;  // the shard file's size at open
  // Set when Open recovered the shard from damage (ShardDamagePolicy::kRecover): then
  // num_records() counts the records recovered.
  virtual const std::optional<ShardDamage>& damage() const = 0;

  // Index entry i (< num_records()): the record's place in its frame, and the frame. Errors
  // (an index file changed since Open) name the index file.
  virtual Status Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const = 0;

  // Reads record i's payload into *out (resized), checking its CRCs. Errors name the
  // shard, record index and byte offset.
  // Under ShardDamagePolicy::kRecover, a read whose index entry frames no record (a header
  // that does not check or disagrees with the index in length, a record outside its frame
  // or the file, a frame that does not decode: a stale index of a rewritten shard, a damaged
  // header) re-indexes the shard from its data, once, and from then on serves position i
  // (i < num_records(), the count at open, on which the epoch's order is built) from the
  // record the alignment maps to it (format/index_realign.h): entries that place a record
  // exactly where the data holds one keep it; between them the others pair up in order; a
  // position left over is a DataLoss "record i is lost: ..." naming what the re-index found,
  // and records left over are not served (the message says how many). A damaged payload
  // under an intact header is that record's error alone. The file system passed to Open
  // must outlive the reader (the re-index reads through it).
  virtual Status Read(uint64_t i, std::string* out) const = 0;

  // Chunked access (shard_chunks.h; what the pipeline's decoded-chunk cache uses).
  // The shard's chunks, cut from its index at open.
  virtual const std::vector<ShardChunk>& chunks() const = 0;
  // The checksum of the shard's index (index_checksum of docs/order.md's snapshot identity).
  virtual uint32_t index_checksum() const = 0;
  // The shard file: a chunk's bytes are fetched with file().ReadAsync(chunk.file_offset,
  // chunk.file_bytes, ...), so remote file systems fetch them without holding a thread.
  virtual const io::RandomAccessFile& file() const = 0;
  // Decodes a chunk from its fetched bytes (exactly [file_offset, file_offset + file_bytes)
  // of the shard). Errors name the shard and the frame's file offset.
  virtual Status DecodeChunk(const ShardChunk& chunk, std::string fetched,
                             DecodedChunk* out) const = 0;
  // Record i's payload, its CRCs checked, as a view into decoded.bytes (or, for a record
  // read where a re-indexed shard holds it, into *scratch): `chunk` is the chunk that holds
  // record i and `decoded` its DecodeChunk output.
  virtual Result<ByteView> RecordInChunk(uint64_t i, const ShardChunk& chunk,
                                         const DecodedChunk& decoded,
                                         std::string* scratch) const = 0;
};

}  // namespace sluice::format

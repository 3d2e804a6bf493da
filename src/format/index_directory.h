// How a ShardReader finds record i: through the whole index in memory (a ShardIndex built
// for a shard without an index file) or through an IndexDirectory, which keeps the index
// file on disk and only a sparse directory of it in memory (docs/format.md, "How the reader
// uses the index").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/format/shard_chunks.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {

// Entries per block of a lazily read index: the unit of the cache and of decoding. The
// directory holds one checkpoint (24 bytes) per span of 1, 2, 4, ... blocks of each table,
// the span chosen at open to fit the table's budget; a lookup whose block is cached decodes,
// on average, half a block, a miss reads and decodes its whole span.
inline constexpr uint64_t kIndexBlockEntries = 128;

// Threading: every method is safe to call concurrently.
class IndexLookup {
 public:
  virtual ~IndexLookup() = default;
  virtual Codec codec() const = 0;
  virtual uint64_t num_records() const = 0;
  // Where the last frame ends in the shard (0 without frames): the shard's size, when the
  // index belongs to the shard.
  virtual uint64_t end_offset() const = 0;
  // Entry i: the record and its frame. i < num_records() (else OutOfRange).
  virtual Status Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const = 0;
  // Frame j (< the index's frame count; else DataLoss naming the index).
  virtual Status Frame(uint64_t j, IndexFrame* frame) const = 0;
  // Entries first .. first + count - 1 in order, each to visit(i, record, frame), as Locate
  // would give them but walked once (a chunk's records at decode); stops at the first
  // error, which it returns (the entries before it were visited). first + count <=
  // num_records() (else OutOfRange). Default: Locate per entry.
  virtual Status LocateRange(uint64_t first, uint64_t count, const IndexEntryVisitor& visit) const;
  // The same walk in bulk, for a loop of the caller's own (a chunk's decode locates each of
  // its records: a call per entry costs more than the entry): out[k] is entry first + k.
  // On an error *out holds the entries before it. Default: LocateRange into *out.
  struct RangeEntry {
    IndexRecord record;
    uint64_t frame_file_offset = 0;  // where the record's frame starts in the shard
  };
  virtual Status LocateRangeInto(uint64_t first, uint64_t count, std::vector<RangeEntry>* out) const;
  // The shard's chunk table (shard_chunks.h), cut from the index when it was opened.
  virtual const std::vector<ShardChunk>& chunks() const = 0;
  // The CRC32C the index file stores (of the serialized index, for one built in memory):
  // what the snapshot identity of a dataset hashes for this shard's index.
  virtual uint32_t checksum() const = 0;
  // Bytes held for the index, outside any shared cache: the directory's checkpoints, or the
  // whole table in memory. (The chunk table comes on top: 40 bytes per chunk.)
  virtual uint64_t memory_bytes() const = 0;
};

// The whole table in memory (~48 bytes per record for codec none).
// `chunk_bytes`: the chunk table's target (kChunkTargetBytes by default; shard_chunks.h).
std::unique_ptr<IndexLookup> NewInMemoryIndexLookup(ShardIndex index,
                                                    uint64_t chunk_bytes = kChunkTargetBytes);

// Opens the index file: scans it once in chunks (checking the CRC and every entry as
// ShardIndex::Parse does, with the same errors) and keeps a checkpoint per span of M blocks
// of kIndexBlockEntries entries, M the smallest power of two that keeps each table's
// checkpoints within `table_budget_bytes` (M = 1 for all but very large tables or small
// budgets). Lookups read the span they need from the file, check it against the CRC taken
// at open (an index file replaced since gives a DataLoss naming it), keep its blocks in
// `cache` (null: a cache of its own; with M > 1 each with the decoder state before it) and
// decode the block up to the entry asked for. NotFound when the file does not exist.
// `visit` (if set) sees every record entry with its frame during the scan, in order.
Result<std::unique_ptr<IndexLookup>> OpenIndexDirectory(
    io::FileSystem* fs, const std::string& index_path, std::shared_ptr<IndexBlockCache> cache,
    uint64_t table_budget_bytes = kDefaultIndexDirectoryBytes,
    uint64_t chunk_bytes = kChunkTargetBytes, const IndexEntryVisitor& visit = nullptr);

}  // namespace sluice::format

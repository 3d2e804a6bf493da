// RecordSource: random access to the records of one dataset snapshot. The read stage asks it
// for record (shard, index) of the position it is at in the epoch's order; everything about
// files, codecs and indexes stays behind this interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/shard_chunks.h"
#include "sluice/format/shard_index.h"
#include "sluice/io/file_system.h"

namespace sluice::pipeline {

// A shard a source could open only by recovering from damage (format::ShardDamagePolicy::
// kRecover): its intact records are in the snapshot, `error` says what was wrong and lost.
struct SourceDamage {
  uint32_t shard = 0;
  Status error;               // DataLoss naming the shard or index file, and what was lost
  uint64_t records_lost = 0;  // at least this many (0: unknown)
};

// What an iterator state records about the data it was saved on, so that a restore onto
// other data is refused, naming both (docs/order.md, "Snapshot identity"). Shard files:
// a hash of every shard's file name, size, index checksum and record count. A dataset pinned
// to a table version supplies the table's own identity.
struct SnapshotIdentity {
  uint64_t fingerprint = 0;  // equal only for the same content
  std::string description;   // how errors name it: "3 shards under /data/x (a.tfrecord ..
                             // c.tfrecord), 12 MB"
};
// Fingerprint helpers of docs/order.md ("Snapshot identity"): a byte string folded into a
// key, and the fingerprint of per-shard (name, size, index checksum, records) entries.
uint64_t HashBytes(uint64_t key, ByteView bytes);
struct ShardIdentity {
  std::string name;  // file name without directories
  uint64_t bytes = 0;
  uint64_t index_checksum = 0;
  uint64_t records = 0;
};
uint64_t SnapshotFingerprint(const std::vector<ShardIdentity>& shards);
// "3 shards under /data/x (data-0.tfrecord .. data-2.tfrecord), 12.0 MB, 3000 records"
std::string DescribeShards(const std::vector<std::string>& paths, uint64_t bytes, uint64_t records);

// Records per chunk of sources that know no chunks of their own (no bytes to fetch).
inline constexpr uint64_t kDefaultChunkRecords = 1024;

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Damaged shards the source recovered from when it was opened (empty for most sources).
  // The read stage applies its on_error policy to them when an iterator starts.
  virtual const std::vector<SourceDamage>& damage() const {
    static const std::vector<SourceDamage> kNone;
    return kNone;
  }
  // The snapshot: records per shard, in shard order.
  virtual const std::vector<uint64_t>& shard_records() const = 0;
  // The shard's name in error messages and quarantine files (its path for files).
  virtual const std::string& shard_name(uint32_t shard) const = 0;
  // Reads record `index` of `shard`. The view points into *scratch or into memory the source
  // owns (valid while it lives). Errors name the shard, record and byte offset.
  // Threading: safe to call concurrently (that is how reads are kept in flight).
  virtual Result<ByteView> Read(uint32_t shard, uint64_t index, std::string* scratch) const = 0;

  // The content identity saved in iterator states. Default: a fingerprint of the shard
  // names and record counts (sources that know no more).
  virtual SnapshotIdentity snapshot() const;

  // Chunked access: what the chunk-aware order permutes and the decoded-chunk cache holds
  // (docs/order.md, "Chunks"). All methods are safe to call concurrently.
  // Whether chunks have bytes to fetch and decode, so that chunks mode reads records through
  // the decoded-chunk cache. Default: false (records in memory, virtual or mapped records:
  // chunks mode keeps its order and reads each record with Read()).
  virtual bool reads_by_chunk() const { return false; }
  // The chunks of `shard`, in record order, tiling its records; each has >= 1 record.
  // Default: runs of kDefaultChunkRecords records with nothing to fetch or decode.
  virtual const std::vector<format::ShardChunk>& chunks(uint32_t shard) const;
  // Fetches a chunk's bytes (chunk.file_bytes of them; never called when that is 0):
  // `done` runs exactly once, never inside the call. Shard files: the shard's
  // io::RandomAccessFile::ReadAsync, so a remote file system fetches without a thread.
  // Default: empty bytes.
  virtual void FetchChunk(uint32_t shard, const format::ShardChunk& chunk, io::ReadCallback done,
                          const io::IoContext& context) const;
  // Whether a compressed chunk is better fetched by FetchChunkNow on the thread about to
  // decode it: local files, where a fetch is a pread, and going through an I/O thread costs
  // two wake-ups per chunk (a restore decodes a whole window of chunks before its first
  // batch: -7% of its time on small zstd records). An uncompressed chunk's fetch is all its
  // work and still goes through FetchChunk. Default: false.
  virtual bool fetches_now() const { return false; }
  // FetchChunk's bytes, read before returning, into `buffer` (a recycled one, possibly
  // longer, possibly empty). Default: FetchChunk, waited for.
  virtual Result<std::string> FetchChunkNow(uint32_t shard, const format::ShardChunk& chunk,
                                            std::string buffer) const;
  // Bytes of adjacent chunks worth fetching together (FetchChunks): one request instead of
  // one per chunk on remote storage, where each costs a round trip and the server's CPU.
  // Default: 0 (a fetch per chunk).
  virtual uint64_t fetch_group_bytes() const { return 0; }
  // Decoded bytes an unshuffled read's chunk cache admits for samples not pulled yet (its
  // next chunks): enough to keep the decodes busy on local files, where more would only take
  // memory a first pass never reuses. Default: 0, up to the cache's capacity (remote storage,
  // where a deep read-ahead hides round trips).
  virtual uint64_t read_ahead_bytes() const { return 0; }
  // Fetches adjacent chunks of `shard` (each starts where the previous ends) at once; `done`
  // gets each chunk's bytes in order, or the first error, exactly once, never inside the
  // call. Default: FetchChunk for each, gathered.
  virtual void FetchChunks(uint32_t shard, const std::vector<format::ShardChunk>& chunks,
                           io::RangesCallback done, const io::IoContext& context) const;
  // Decodes the bytes FetchChunk delivered (CPU work: runs on a pipeline thread).
  // Default: nothing to decode.
  virtual Status DecodeChunk(uint32_t shard, const format::ShardChunk& chunk, std::string fetched,
                             format::DecodedChunk* out) const;
  // Record `index` of `shard`, which lies in `chunk`, from that chunk decoded. The view
  // points into `decoded`, *scratch or memory the source owns. Default: Read(). The read
  // stage takes a record straight from a chunk that a format::ShardReader decoded
  // (format::IntactRecordInChunk) and calls this where that fails: a source that hands out
  // other bytes than its shard reader's records must not leave DecodedChunk::reindexed set.
  virtual Result<ByteView> ReadInChunk(uint32_t shard, uint64_t index,
                                       const format::ShardChunk& chunk,
                                       const format::DecodedChunk& decoded,
                                       std::string* scratch) const;

 private:
  mutable std::once_flag default_chunks_once_;
  mutable std::vector<std::vector<format::ShardChunk>> default_chunks_;
};

// Records held in memory, one vector per shard (tests, small datasets, benchmarks). Its
// chunks are runs of records of up to `chunk_bytes` (at least one record each), nothing to
// fetch or decode; its identity hashes the records themselves.
std::shared_ptr<RecordSource> NewMemorySource(std::vector<std::vector<std::string>> shards,
                                              uint64_t chunk_bytes = format::kChunkTargetBytes);

// Indexed shard files (any codec) read through format::ShardReader: each read is one ranged
// read (and for zstd one frame decompression, cached per thread). Opens every shard and its
// index ("<shard>.idx", built in memory when missing and options.build_missing_index).
// With options.on_damage = kRecover, damaged shards are recovered and listed in damage().
// The shards share one index block cache and one budget for their index directories
// (docs/format.md, "How the reader uses the index").
// `check`, when set, is called with each shard's position in `paths` and its opened reader,
// and an error fails the open (Dataset::Read checks shards against their manifest), except a
// DataLoss under options.on_damage = kRecover: that shard is then listed in damage().
// `listed`: entries of a listing of the shards' directory (ResolvedDataset::listing); the
// shards and indexes in it open without a request each on S3 (io::ListedFileSystem).
using ShardCheck = std::function<Status(size_t shard, const format::ShardReader& reader)>;
Result<std::shared_ptr<RecordSource>> OpenShardSource(
    io::FileSystem* fs, const std::vector<std::string>& paths,
    const format::ShardReaderOptions& options = {}, const ShardCheck& check = {},
    const std::vector<io::FileInfo>& listed = {});

}  // namespace sluice::pipeline

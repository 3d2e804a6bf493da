// Options of the read stage (the source) and of the order stages that configure it:
// shuffle (GlobalOrder) and shard (RankSlice). read + shuffle + shard are not streaming
// stages: they decide which record the source reads at each step (docs/pipeline.md, "Order").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/io/file_system.h"
#include "sluice/pipeline/global_order.h"
#include "sluice/pipeline/pipeline_options.h"

namespace sluice::pipeline {

struct ReadOptions {
  // Each entry is a shard file, a directory holding dataset.json, a glob, or a table
  // (docs/table.md: its directory, or "DIR@v12" for version 12); shards are read in the order
  // given (each entry's shards sorted). Ignored by Dataset::FromSource.
  std::vector<std::string> paths;
  // The version of the tables among `paths` (or the latest committed at or before the
  // timestamp, ms since the epoch). Default: the latest at Dataset::Read, fixed for the
  // Dataset's life.
  std::optional<int64_t> table_version;
  std::optional<int64_t> table_timestamp_ms;
  // Default: null = the file system FileSystemFor() picks for each path.
  io::FileSystem* fs = nullptr;
  bool verify_crc = true;  // Default: true
  // A shard without an index is indexed by one sequential pass at open; read an uncompressed
  // one through a memory map instead of positional reads (format::RecordReaderOptions::
  // map_uncompressed: a shard truncated meanwhile then kills the process with SIGBUS).
  // Default: false.
  bool map_uncompressed = false;
  // Read tasks in flight (each reads chunk_records records). Default: 0 = autotune
  // (starts at 2).
  uint32_t parallelism = 0;
  // Records per read task. Default: 0 = 1024, fewer for records over 4 KiB (a task holds at
  // most 4 MiB of records, but never fewer than 64): a task's hand-offs cost the same for 64
  // records as for 1024, which read tiny records faster (docs/pipeline.md).
  uint32_t chunk_records = 0;
  // Shard files: decoded bytes per chunk (the unit shuffle mode chunks permutes, fetches and
  // decodes: docs/order.md, "Chunks"); a zstd frame larger than it is a chunk of its own.
  // Smaller chunks shuffle finer for the same window bytes, larger ones fetch less often.
  // Part of the order (saved states check the chunk count). Default: 1 MiB.
  uint64_t chunk_bytes = uint64_t{1} << 20;
  // A dataset whose decoded chunks all fit in the decoded-chunk cache (half the memory
  // budget) keeps them when an iterator ends, and its next iterator (the next epoch, a
  // restore, a shuffle or shard of this read) starts with them instead of decoding again;
  // between iterators they are charged to no budget (docs/pipeline.md, "Decoded chunks kept
  // between epochs"). Default: true.
  bool keep_decoded_chunks = true;
  uint64_t epoch = 0;                   // Default: 0 (the first epoch; repeat counts on from it)
  std::optional<ErrorPolicy> on_error;  // Default: PipelineOptions::on_error
  // The node-local cache (docs/cache.md): chunks read from the paths are kept in a directory
  // on local disk shared by the node's processes. Default: on for remote paths (s3://,
  // hdfs://), off for local ones unless `cache_dir` is set.
  std::optional<bool> cache;
  std::string cache_dir;     // Default: "" = $XDG_CACHE_HOME/sluice or ~/.cache/sluice
  uint64_t cache_bytes = 0;  // Default: 0 = the directory's capacity, or half its free disk
  // Ranks per node sharing one cache directory (consecutive global ranks, as torchrun, Slurm
  // and Open MPI number them): the cache plans its eviction and prefetch for all of them.
  // Default: 0 = from the environment (io::cache::NodeFromEnvironment), 1 when it says nothing.
  uint32_t cache_node_ranks = 0;
};

struct ShuffleOptions {
  // Default: chunks (docs/order.md): chunks permuted, records permuted within windows of
  // chunks sized by the memory budget; each chunk is fetched and decoded once per window.
  // global: today's exact per-record permutation (one read and, compressed, one frame
  // decode per record: for uncompressed local data).
  ShuffleMode mode = ShuffleMode::kChunks;
  uint64_t seed = 0;           // Default: 0
  uint32_t block_shards = 4;   // Default: 4 (block mode: shards per window)
  size_t buffer_size = 10000;  // Default: 10000 elements (buffer mode)
  // Chunks mode: the window (all lanes) in decoded bytes or chunks, and the lanes. Default:
  // 0 = from the memory budget (the decoded-chunk cache's half of it) and the snapshot.
  uint64_t window_bytes = 0;
  uint64_t window_chunks = 0;
  uint32_t lanes = 0;
};

}  // namespace sluice::pipeline

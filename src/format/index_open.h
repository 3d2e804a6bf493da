// Which index a ShardReader uses: the shard's ".idx" file when it is intact and matches the
// shard, an index built in memory when the file is missing; anything else is a problem that
// ShardReader::Open reports or, under ShardDamagePolicy::kRecover, recovers from
// (docs/format.md, "Recovering a damaged shard").
#pragma once

#include <memory>

#include "format/index_directory.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {

struct OpenedIndex {
  // The index, when one could be read (it may still not match the shard: see problem).
  std::unique_ptr<IndexLookup> index;
  // OK, or why `index` cannot serve the shard: DataLoss for a corrupt, empty, foreign or
  // stale index and for a shard that cannot be indexed; other codes for I/O failures and
  // a missing index without build_missing_index.
  Status problem;
};

// The options of a sequential pass over the shard (to build or recover its index).
RecordReaderOptions SequentialReadOptions(const ShardReaderOptions& options);

OpenedIndex OpenShardIndex(io::FileSystem* fs, const io::RandomAccessFile& shard,
                           const ShardReaderOptions& options);

}  // namespace sluice::format

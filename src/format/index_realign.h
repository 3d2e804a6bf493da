// A shard re-indexed while it is read: its index passed the checks at open (codec, size, the
// first and last record of an uncompressed shard) but a record read through it does not
// frame a record there (a stale index of a shard rewritten with the same size, a damaged
// header or frame). Under ShardDamagePolicy::kRecover the reader then indexes the shard from
// its data (ShardIndex::Recover) and maps the positions of the index it was opened with,
// which the epoch's order is built on, onto the records the data holds (docs/format.md,
// "Recovering a damaged shard").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/index_directory.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {

// How position i of the opened index maps onto the recovered records (RealignedIndex::map).
inline constexpr uint64_t kPositionLost = UINT64_MAX;
// Set on a mapped record that is not where the opened index placed entry i (the two were
// paired by order between aligned entries): its bytes must be read at the recovered place.
inline constexpr uint64_t kRecordMoved = uint64_t{1} << 63;

struct RealignedIndex {
  std::unique_ptr<IndexLookup> index;  // the recovered records, in memory
  // Position i (< the opened index's count) -> recovered record | kRecordMoved, or
  // kPositionLost. The alignment (invariants):
  //  1. An entry that places a record exactly where the data holds one (same frame, offset
  //     and length) maps to it ("aligned"); aligned pairs increase in both numberings.
  //  2. Between two aligned pairs, the remaining positions and records pair up in order.
  //  3. Positions left over are lost; records left over are not served (the order was built
  //     on the counts at open).
  // So no record is served at two positions, and a position that read intact through the
  // opened index before the re-index maps to that same record after it.
  std::vector<uint64_t> map;
  uint64_t lost_positions = 0;
  uint64_t unserved_records = 0;
  std::vector<SkippedRange> lost;  // ranges of the shard that did not read as records
  std::string description;         // the failure, what was re-indexed, what was lost
};

// Re-indexes `shard_path` from its data and aligns `opened` with it. `failure` is the read
// error that showed the index wrong (it heads the description).
Result<std::unique_ptr<RealignedIndex>> ReindexAndAlign(
    io::FileSystem* fs, const std::string& shard_path, const IndexLookup& opened,
    const Status& failure, const RecordReaderOptions& read_options, uint64_t chunk_bytes);

}  // namespace sluice::format

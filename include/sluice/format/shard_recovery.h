// Rewriting a damaged shard with the records that still read intact: the offline fix behind
// `sluice index --recover` (docs/format.md, "Recovering a damaged shard").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/format/record.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

struct ShardRecoveryReport {
  Codec codec = Codec::kNone;
  uint64_t records = 0;            // intact records, now the whole shard
  std::vector<SkippedRange> lost;  // what did not read as records (empty: the shard was fine)
  std::string damaged_path;        // where the damaged original went ("" when it was fine)
};

// Reads `path` in skip mode. When something was damaged, writes the intact records (same
// codec, in order) as a new shard and index under the original name, and keeps the damaged
// original as "<path>.damaged" (its index, if any, as "<path>.idx.damaged"): nothing is
// deleted. A shard that reads clean only gets its index (re)written. Fails, touching
// nothing, when "<path>.damaged" exists already.
Result<ShardRecoveryReport> RecoverShard(io::FileSystem* fs, const std::string& path);

}  // namespace sluice::format

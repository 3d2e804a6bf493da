// RecordSource: random access to the records of one dataset snapshot. The read stage asks it
// for record (shard, index) of the position it is at in the epoch's order; everything about
// files, codecs and indexes stays behind this interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
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
};

// Records held in memory, one vector per shard (tests, small datasets, benchmarks).
std::shared_ptr<RecordSource> NewMemorySource(std::vector<std::vector<std::string>> shards);

// Indexed shard files (any codec) read through format::ShardReader: each read is one ranged
// read (and for zstd one frame decompression, cached per thread). Opens every shard and its
// index ("<shard>.idx", built in memory when missing and options.build_missing_index).
// With options.on_damage = kRecover, damaged shards are recovered and listed in damage().
// The shards share one index block cache and one budget for their index directories
// (docs/format.md, "How the reader uses the index").
// `check`, when set, is called with each shard's position in `paths` and its opened reader,
// and an error fails the open (Dataset::Read checks shards against their manifest).
using ShardCheck = std::function<Status(size_t shard, const format::ShardReader& reader)>;
Result<std::shared_ptr<RecordSource>> OpenShardSource(
    io::FileSystem* fs, const std::vector<std::string>& paths,
    const format::ShardReaderOptions& options = {}, const ShardCheck& check = {});

}  // namespace sluice::pipeline

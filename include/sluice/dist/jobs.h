// The keyed jobs of the `sluice` command, as library calls (docs/dist.md, "Jobs"): every
// rank of a Transport calls the same function with the same options; in one process without
// MPI the Transport is InProcessGroup(1). Inputs are datasets (a directory with dataset.json,
// a shard, or a glob) on any file system sluice reads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/keyed_aggregation.h"
#include "sluice/dist/task_runner.h"
#include "sluice/dist/transport.h"

namespace sluice::dist {

// What every job shares: scheduling, memory, faults, progress.
struct JobOptions {
  TaskRunnerOptions tasks;  // scheduler policies, test-only faults, progress callbacks
  uint64_t memory_budget = uint64_t{256} << 20;  // Default: 256 MiB per rank
  std::string spill_dir = "/tmp";                // Default: /tmp (local disk of each rank)
  bool combine = true;        // Default: per-rank combiner (two-stage aggregation)
  bool salt_hot_keys = true;  // Default: salting of hot keys
};

// How a job writes its output dataset's shards.
struct OutputShards {
  std::string codec = "zstd";          // Default: zstd
  uint64_t shard_bytes = 100'000'000;  // Default: 100 MB
  std::string prefix = "data";         // Default: data-<run>-t000003-00000.tfrecord.zst
  bool overwrite = false;              // Default: refuse an OUT holding a published dataset
  // OUT is a sluice table (docs/table.md): the output is one table commit, an append, or
  // with `table_overwrite` a new version holding only the output. Default: a dataset
  bool table = false;
  bool table_overwrite = false;
};

// `sluice stats IN --key F`: records per value of feature F.
struct StatsOptions {
  std::string input;
  std::string feature;
  JobOptions job;
};

struct StatsResult {
  uint64_t records = 0;  // records read
  uint64_t missing = 0;  // records without the feature (or with no values)
  // Value (bytes as they are, int64 in decimal, float as %g) -> records holding it. A record
  // with several values counts once under each distinct one.
  std::map<std::string, uint64_t> counts;
  std::vector<uint64_t> load;  // per rank: entries received by the final aggregation
  uint64_t hot_keys = 0;
  uint64_t tasks = 0;
  JobProgress progress;
};

// Collective. The counts are complete on rank 0 only (other ranks return their totals).
Result<StatsResult> RunStats(Transport* transport, const StatsOptions& options);

// `sluice dedup IN OUT [--feature F]`: exact deduplication by the content hash (XXH3-128) of
// feature F's values, or of the whole record; of equal records the first in input order
// (shard order, then record order) is kept, and the output keeps the input's order.
// Records without feature F are all kept.
struct DedupOptions {
  std::string input;
  std::string output;
  std::string feature;  // "" = the whole record
  OutputShards shards;
  JobOptions job;
};

struct DedupResult {
  uint64_t records_in = 0, records_out = 0;
  uint64_t shards = 0;
  std::vector<uint64_t> load;
  uint64_t hot_keys = 0;
  uint64_t reused = 0;  // map tasks an interrupted run of the same job had finished
  JobProgress progress;
};

// Collective. The counts are complete on rank 0.
Result<DedupResult> RunDedup(Transport* transport, const DedupOptions& options);

// `sluice reshard IN OUT [--shard-size S] [--seed N]`: a global re-shuffle into new shards.
// Record i of the input (in input order) goes to output shard s(seed, i) and within it
// takes its place by a second key of (seed, i): the output is a function of the input and
// the seed alone, the same for any number of ranks. The shard count is the input's bytes
// over the shard size, rounded up.
struct ReshardOptions {
  std::string input;
  std::string output;
  uint64_t seed = 0;
  OutputShards shards;
  JobOptions job;
};

struct ReshardResult {
  uint64_t records = 0;
  uint64_t shards = 0;
  uint64_t reused = 0;  // map tasks an interrupted run of the same job had finished
  JobProgress progress;
};

// Collective. The counts are complete on rank 0.
Result<ReshardResult> RunReshard(Transport* transport, const ReshardOptions& options);

// An input's shards as tasks (one per shard, in order), with their sizes. The input is a
// dataset, a shard or a glob, or a table ("T", "T@v12": that version's live files).
Result<std::vector<TaskSpec>> ShardTasks(const std::string& input);

}  // namespace sluice::dist

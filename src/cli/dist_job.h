// What the distributed commands (stats, dedup, reshard; convert under MPI) share: the
// job's transport (MPI when launched by mpirun/srun, else one rank without MPI), the
// scheduling and memory flags, test-only faults from SLUICE_FAULT_* variables, and the
// progress line of rank 0 (docs/dist.md).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.h"
#include "sluice/dist/jobs.h"
#include "sluice/dist/transport.h"
#include "sluice/format/dataset_publisher.h"

namespace sluice::cli {

struct DistFlags {
  bool no_speculation = false;
  double speculation_quantile = 0.75;
  double speculation_multiplier = 1.5;
  double locality_wait = 3.0;
  std::vector<std::string> local_inputs;  // node-local input directories (dist/locality.h)
  std::string memory_budget = "256MiB";
  std::string spill_dir;  // Default: $TMPDIR, else /tmp
  bool no_combine = false;
  bool no_salt = false;
};
// Every flag of a keyed job (stats, dedup, reshard): the two below.
void AddDistFlags(CLI::App* command, DistFlags* flags);
// --no-speculation, --speculation-quantile, --speculation-multiplier, --locality-wait,
// --local-inputs.
void AddSchedulingFlags(CLI::App* command, DistFlags* flags);
// --memory-budget, --spill-dir, --no-combine, --no-salt: the keyed aggregation's.
void AddKeyedJobFlags(CLI::App* command, DistFlags* flags);
// For convert: the keyed aggregation's flags are a usage error naming the commands they
// apply to (silently ignoring a memory budget would mislead).
void RefuseKeyedJobFlags(CLI::App* command);

// The transport of this process: MPI_COMM_WORLD under mpirun/srun, else one rank.
Result<std::unique_ptr<dist::Transport>> OpenJobTransport();

// JobOptions from the flags, the SLUICE_FAULT_* variables and, on rank 0, a progress line
// on stderr ("tasks 12/40, 3.1k records/s, ETA 9 s, 1 straggler, 2 speculative copies").
Result<dist::JobOptions> MakeJobOptions(const DistFlags& flags, const dist::Transport& transport,
                                        const std::string& label);

// The output options of the `convert` commands as a job's output shards.
Result<dist::OutputShards> OutputShardsFrom(const OutputOptions& options);

// `--table` (OUT is a table: the output is one commit) and `--mode append|overwrite`.
struct TableOutputFlags {
  bool table = false;
  std::string mode = "append";  // Default: append
};
void AddTableOutputFlags(CLI::App* command, TableOutputFlags* flags);
// Sets the table fields of `shards` from the flags.
void ApplyTableOutputFlags(const TableOutputFlags& flags, dist::OutputShards* shards);

// `sluice clean` and `sluice table vacuum`: the resumable state of jobs no live run owns in
// the directory `where` (dist/job_record.h), deleted unless `dry_run`.
Result<std::vector<format::Leftover>> ReclaimDeadJobRecords(const Location& where, bool dry_run);

// Ends a command on every rank: rank 0 reports `status`; the exit code for all.
int FinishJob(const dist::Transport& transport, const Status& status);

}  // namespace sluice::cli

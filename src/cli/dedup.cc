// `sluice dedup IN OUT [--feature F]`: exact deduplication, in one process or across the
// ranks of mpirun/srun (docs/dist.md).
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/dist_job.h"
#include "cli/progress.h"

namespace sluice::cli {
namespace {

struct DedupFlags {
  std::string input, output, feature;
  OutputOptions output_options;
  TableOutputFlags table_output;
  DistFlags dist;
};

int RunDedupCommand(const DedupFlags& f) {
  Stopwatch clock;
  auto transport = OpenJobTransport();
  if (!transport.ok()) return ReportError(transport.status());
  dist::Transport* t = transport->get();
  auto job = MakeJobOptions(f.dist, *t, "dedup");
  if (!job.ok()) return FinishJob(*t, job.status());
  dist::DedupOptions o;
  o.input = f.input;
  o.output = f.output;
  o.feature = f.feature;
  auto shards = OutputShardsFrom(f.output_options);
  if (!shards.ok()) return FinishJob(*t, shards.status());
  ApplyTableOutputFlags(f.table_output, &*shards);
  o.shards = *shards;
  o.job = *job;
  auto result = dist::RunDedup(t, o);
  if (!result.ok()) return FinishJob(*t, result.status());
  if (t->rank() == 0) {
    std::printf("records in:  %llu\nrecords out: %llu\nduplicates:  %llu\nshards:      %llu\n",
                static_cast<unsigned long long>(result->records_in),
                static_cast<unsigned long long>(result->records_out),
                static_cast<unsigned long long>(result->records_in - result->records_out),
                static_cast<unsigned long long>(result->shards));
    std::printf("reused:      %llu task(s) of an interrupted run\n",
                static_cast<unsigned long long>(result->reused));
    std::printf("ranks:       %d\nseconds:     %.2f\n", t->size(), clock.seconds());
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

void AddDedupCommand(CLI::App* cmd, int* exit_code) {
  auto f = std::make_shared<DedupFlags>();
  cmd->footer(
      "Records are equal when the XXH3-128 hashes of their bytes (or of feature F's values) "
      "are; the first in input order is kept and the output keeps the input's order. Records "
      "without F are kept. Runs in one process, or under mpirun/srun across ranks.");
  cmd->add_option("IN", f->input,
                  "a dataset (directory with dataset.json, shard, or glob) or a table "
                  "(T, or T@v12 for a version)")
      ->required();
  cmd->add_option("OUT", f->output, "output directory (a dataset, or a table with --table)")
      ->required();
  cmd->add_option("--feature", f->feature, "compare this feature's values, not whole records");
  AddOutputOptions(cmd, &f->output_options);
  AddTableOutputFlags(cmd, &f->table_output);
  AddDistFlags(cmd, &f->dist);
  cmd->callback([f, exit_code] { *exit_code = RunDedupCommand(*f); });
}

}  // namespace sluice::cli

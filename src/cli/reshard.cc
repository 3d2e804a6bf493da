// `sluice reshard IN OUT [--shard-size S] [--seed N]`: a global re-shuffle into new shards,
// in one process or across the ranks of mpirun/srun (docs/dist.md).
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/dist_job.h"
#include "cli/progress.h"

namespace sluice::cli {
namespace {

struct ReshardFlags {
  std::string input, output;
  uint64_t seed = 0;
  OutputOptions output_options;
  TableOutputFlags table_output;
  DistFlags dist;
};

int RunReshardCommand(const ReshardFlags& f) {
  Stopwatch clock;
  auto transport = OpenJobTransport();
  if (!transport.ok()) return ReportError(transport.status());
  dist::Transport* t = transport->get();
  auto job = MakeJobOptions(f.dist, *t, "reshard");
  if (!job.ok()) return FinishJob(*t, job.status());
  dist::ReshardOptions o;
  o.input = f.input;
  o.output = f.output;
  o.seed = f.seed;
  auto shards = OutputShardsFrom(f.output_options);
  if (!shards.ok()) return FinishJob(*t, shards.status());
  ApplyTableOutputFlags(f.table_output, &*shards);
  o.shards = *shards;
  o.job = *job;
  auto result = dist::RunReshard(t, o);
  if (!result.ok()) return FinishJob(*t, result.status());
  if (t->rank() == 0) {
    std::printf(
        "records: %llu\nshards:  %llu\nreused:  %llu task(s) of an interrupted run\n"
        "ranks:   %d\nseconds: %.2f\n",
        static_cast<unsigned long long>(result->records),
        static_cast<unsigned long long>(result->shards),
        static_cast<unsigned long long>(result->reused), t->size(), clock.seconds());
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

void AddReshardCommand(CLI::App* cmd, int* exit_code) {
  auto f = std::make_shared<ReshardFlags>();
  cmd->footer(
      "Every record moves to a random output shard and a random place in it, both functions "
      "of --seed and the record's input position only: the output is the same for any number "
      "of ranks. Shard count: the input's bytes over --shard-size, rounded up.");
  cmd->add_option("IN", f->input,
                  "a dataset (directory with dataset.json, shard, or glob) or a table "
                  "(T, or T@v12 for a version)")
      ->required();
  cmd->add_option("OUT", f->output, "output directory (a dataset, or a table with --table)")
      ->required();
  cmd->add_option("--seed", f->seed, "shuffle seed")->capture_default_str();
  AddOutputOptions(cmd, &f->output_options);
  AddTableOutputFlags(cmd, &f->table_output);
  AddDistFlags(cmd, &f->dist);
  cmd->callback([f, exit_code] { *exit_code = RunReshardCommand(*f); });
}

}  // namespace sluice::cli

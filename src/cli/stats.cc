// `sluice stats IN --key F [--json]`: records per value of feature F, in one process or
// across the ranks of mpirun/srun (docs/dist.md).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/dist_job.h"

namespace sluice::cli {
namespace {

struct StatsFlags {
  std::string input;
  std::string key;
  bool json = false;
  DistFlags dist;
};

double MaxOverMean(const std::vector<uint64_t>& load) {
  uint64_t sum = 0, max = 0;
  for (uint64_t l : load) {
    sum += l;
    max = std::max(max, l);
  }
  return sum == 0 ? 0 : static_cast<double>(max) * load.size() / static_cast<double>(sum);
}

void PrintJson(const StatsFlags& f, const dist::StatsResult& r, int ranks) {
  nlohmann::json out;
  out["feature"] = f.key;
  out["records"] = r.records;
  out["missing"] = r.missing;
  out["counts"] = nlohmann::json::object();
  for (const auto& [value, n] : r.counts)
    out["counts"][value] = n;  // dumps as \u escapes if needed
  out["ranks"] = ranks;
  out["tasks"] = r.tasks;
  out["final_aggregation"] = {{"entries_per_rank", r.load},
                              {"max_over_mean", MaxOverMean(r.load)},
                              {"hot_keys", r.hot_keys}};
  out["speculative_copies"] = r.progress.speculative_copies;
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

void PrintText(const dist::StatsResult& r) {
  std::vector<std::pair<std::string, uint64_t>> rows(r.counts.begin(), r.counts.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [value, n] : rows) {
    std::printf("%llu\t%s\n", static_cast<unsigned long long>(n), value.c_str());
  }
  std::printf("records: %llu\nmissing: %llu\nvalues:  %zu\n",
              static_cast<unsigned long long>(r.records),
              static_cast<unsigned long long>(r.missing), r.counts.size());
}

int RunStatsCommand(const StatsFlags& f) {
  auto transport = OpenJobTransport();
  if (!transport.ok()) return ReportError(transport.status());
  dist::Transport* t = transport->get();
  auto job = MakeJobOptions(f.dist, *t, "stats");
  if (!job.ok()) return FinishJob(*t, job.status());
  dist::StatsOptions o{f.input, f.key, *job};
  auto result = dist::RunStats(t, o);
  if (!result.ok()) return FinishJob(*t, result.status());
  if (t->rank() == 0) {
    if (f.json) {
      PrintJson(f, *result, t->size());
    } else {
      PrintText(*result);
    }
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

void AddStatsCommand(CLI::App* cmd, int* exit_code) {
  auto f = std::make_shared<StatsFlags>();
  cmd->footer(
      "Prints 'COUNT<TAB>VALUE' lines, most frequent first, then totals; --json prints the "
      "counts and the per-rank load of the final aggregation. Runs in one process, or across "
      "ranks under `mpirun -np N sluice stats ...` / `srun -n N --mpi=pmix sluice stats ...`.");
  cmd->add_option("IN", f->input,
                  "a dataset (directory with dataset.json, shard, or glob) or a table "
                  "(T, or T@v12 for a version)")
      ->required();
  cmd->add_option("--key", f->key, "feature to count values of (e.g. label, lang)")->required();
  cmd->add_flag("--json", f->json, "print JSON");
  AddDistFlags(cmd, &f->dist);
  cmd->callback([f, exit_code] { *exit_code = RunStatsCommand(*f); });
}

}  // namespace sluice::cli

// Distributed-job benchmarks (docs/dist.md, "Benchmarks"), each a ratio table:
//  1. speculation: 4 ranks run tasks of equal length (sleeps, so the 2 shared cores do not
//     blur the picture) through the real TaskRunner and Scheduler; one rank 5x slower; job
//     time with and without speculation against the job with no slow rank.
//  2. skew: Zipf(1.2) keys over 4 ranks through the real keyed aggregation; max/mean of the
//     entries each rank's final aggregation receives, with salting + combiner vs without.
//  3. the 1,000-rank simulation table (log-normal compute, 1% of ranks 5x slow, 3 replicas,
//     remote reads at the network rate): locality blind / preferred / waited for, with and
//     without speculation, on 10 GbE and 1 GbE per node.
// Ranks are threads of this process (InProcessGroup); under MPI the same code runs with
// `mpirun -np 4 sluice stats` (bench/dist/run.sh measures that path).
//
//   build/bin/dist_bench [--job-seconds 2] [--records 400000] [--seeds 20] [--simulation-only]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "sluice/base/random.h"
#include "sluice/dist/keyed_aggregation.h"
#include "sluice/dist/simulation.h"
#include "sluice/dist/task_runner.h"

namespace sluice::dist {
namespace {

class SleepTask : public TaskHandler {
 public:
  explicit SleepTask(double seconds) : seconds_(seconds) {}
  Result<std::string> Run(const TaskSpec&, int, const io::CancelToken& cancel) override {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds_);
    while (std::chrono::steady_clock::now() < until) {
      if (cancel.cancelled()) return Cancelled("lost the race");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::string();
  }

 private:
  double seconds_;
};

struct JobTime {
  double seconds = 0;
  uint64_t copies = 0;
};

JobTime RunSleepJob(int ranks, size_t tasks, double task_seconds, Rank slow_rank,
                    bool speculation) {
  auto group = InProcessGroup(ranks);
  std::vector<TaskSpec> specs(tasks);
  for (size_t i = 0; i < tasks; ++i) specs[i].id = i;
  JobTime out;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (Rank r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      TaskRunnerOptions o;
      o.scheduler.speculation.enabled = speculation;
      o.faults.slow_rank = slow_rank;
      o.faults.slow_rank_factor = 5;
      TaskRunner runner(group[r].get(), o);
      SleepTask handler(task_seconds);
      auto result = runner.Run(specs, &handler);
      if (r == 0 && result.ok()) out.copies = result->progress.speculative_copies;
    });
  }
  for (auto& t : threads) t.join();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// One row per task count; task lengths make the job without a slow rank last ~`job_seconds`.
void Speculation(const std::vector<size_t>& task_counts, double job_seconds) {
  std::printf("\n## Speculation: 4 ranks, rank 1 5x slower, tasks of equal length\n\n");
  std::printf(
      "| tasks (per rank) | task ms | no slow rank | slow rank, speculation (default) | slow "
      "rank, --no-speculation | copies |\n|---|---|---|---|---|---|\n");
  for (size_t tasks : task_counts) {
    double s = job_seconds * 4 / static_cast<double>(tasks);
    JobTime base = RunSleepJob(4, tasks, s, -1, true);
    JobTime with = RunSleepJob(4, tasks, s, 1, true);
    JobTime without = RunSleepJob(4, tasks, s, 1, false);
    std::printf("| %zu (%zu) | %.0f | %.2f s | %.2f s = %.2fx | %.2f s = %.2fx | %llu |\n", tasks,
                tasks / 4, s * 1000, base.seconds, with.seconds, with.seconds / base.seconds,
                without.seconds, without.seconds / base.seconds,
                static_cast<unsigned long long>(with.copies));
  }
  std::printf("\ngoal: with speculation <= 1.3x; without ~2x or worse\n");
}

// Zipf(s) over `keys` keys by inverse CDF.
class Zipf {
 public:
  Zipf(size_t keys, double s) : cdf_(keys) {
    double sum = 0;
    for (size_t k = 0; k < keys; ++k) cdf_[k] = (sum += 1 / std::pow(k + 1.0, s));
    for (double& c : cdf_) c /= sum;
  }
  size_t Draw(SampleRng* rng) const {
    return std::lower_bound(cdf_.begin(), cdf_.end(), rng->NextDouble()) - cdf_.begin();
  }

 private:
  std::vector<double> cdf_;
};

double MaxOverMean(const std::vector<uint64_t>& load) {
  uint64_t sum = 0, max = 0;
  for (uint64_t l : load) sum += l, max = std::max(max, l);
  return sum ? static_cast<double>(max) * load.size() / static_cast<double>(sum) : 0;
}

std::vector<uint64_t> SkewLoad(uint64_t records, bool salt, bool combine, uint64_t budget) {
  const int ranks = 4;
  auto group = InProcessGroup(ranks);
  std::string dir = std::filesystem::temp_directory_path() / "sluice-dist-bench";
  std::filesystem::create_directories(dir);
  Zipf zipf(100000, 1.2);
  std::vector<uint64_t> load;
  std::vector<std::thread> threads;
  for (Rank r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      AggregationOptions o;
      o.salt_hot_keys = salt;
      o.combine = combine;
      o.memory_budget = budget;
      o.spill_dir = dir;
      // 8 map tasks per rank, as a job over many shards has.
      std::vector<std::string> runs;
      std::vector<KeySample> samples;
      SampleRng rng(Mix64(r + 1));
      for (int task = 0; task < 8; ++task) {
        MapOutput out(o, dir + "/map-" + std::to_string(r) + "-" + std::to_string(task),
                      r * 8 + task);
        for (uint64_t i = 0; i < records / ranks / 8; ++i) {
          (void)out.Add("key" + std::to_string(zipf.Draw(&rng)), 1);
        }
        (void)out.Close();
        runs.push_back(out.run_path());
        samples.push_back(out.sample());
      }
      auto result = AggregateByKey(group[r].get(), runs, samples, o);
      if (r == 0 && result.ok()) load = result->load;
      for (const auto& run : runs) std::filesystem::remove(run);
    });
  }
  for (auto& t : threads) t.join();
  return load;
}

void Skew(uint64_t records) {
  std::printf("\n## Skew: %llu records, Zipf(1.2) over 100,000 keys, 4 ranks\n\n",
              static_cast<unsigned long long>(records));
  std::printf(
      "| aggregation | entries per rank (final aggregation) | max/mean | goal "
      "|\n|---|---|---|---|\n");
  struct Row {
    const char* name;
    bool salt, combine;
    uint64_t budget;
    const char* goal;
  } rows[] = {
      {"hash partitioning only (--no-salt --no-combine)", false, false, uint64_t{256} << 20, ""},
      {"combiner only (--no-salt)", false, true, uint64_t{1} << 20, ""},
      {"salting + two-stage (default)", true, true, uint64_t{1} << 20, "<= 1.25"},
      {"salting, no combiner (--no-combine)", true, false, uint64_t{256} << 20, ""},
  };
  for (const Row& row : rows) {
    auto load = SkewLoad(records, row.salt, row.combine, row.budget);
    std::string cells;
    for (uint64_t l : load) cells += (cells.empty() ? "" : " / ") + std::to_string(l);
    std::printf("| %s | %s | %.2f | %s |\n", row.name, cells.c_str(), MaxOverMean(load), row.goal);
  }
}

void SimulationTable(int seeds) {
  const SimulationOptions d;
  std::printf(
      "\n## Simulation: %d ranks (%d nodes x %d), %llu tasks, compute log-normal (median "
      "%.0f s, sigma %.1f), 1%% of ranks %.0fx slow, each input %llu MiB on %d of %d nodes, "
      "read at %.0f MB/s from local disk, at min(disk, network) from another node\n\n",
      d.ranks, d.ranks / d.ranks_per_node, d.ranks_per_node,
      static_cast<unsigned long long>(d.tasks), d.median_task_seconds, d.sigma, d.slow_factor,
      static_cast<unsigned long long>(d.task_bytes >> 20), d.replicas, d.ranks / d.ranks_per_node,
      d.disk_bytes_per_second / 1e6);
  std::printf(
      "| network per rank | locality | speculation | job seconds, mean of %d seeds (range) | "
      "vs locality-blind | speculative copies | attempts reading locally "
      "|\n|---|---|---|---|---|---|---|\n",
      seeds);
  struct Network {
    const char* name;
    double bytes_per_second;
  } networks[] = {{"10 GbE / 4 = 312 MB/s", 1.25e9 / 4}, {"1 GbE / 4 = 31 MB/s", 1.25e8 / 4}};
  struct Row {
    const char* name;
    bool tell_hosts;
    double wait;
  } rows[] = {{"blind (hosts not given)", false, 0},
              {"preferred, wait 0 s", true, 0},
              {"preferred, wait 3 s (default)", true, 3}};
  // One seed's job time turns on which long task a slow rank starts last: the mean of
  // `seeds` jobs (different task times, slow ranks and replicas), with their range.
  for (const Network& net : networks) {
    for (bool spec : {false, true}) {
      double blind = 0;
      for (const Row& row : rows) {
        double sum = 0, lo = 1e300, hi = 0;
        uint64_t copies = 0, local = 0, remote = 0;
        for (int seed = 1; seed <= seeds; ++seed) {
          SimulationOptions o;
          o.seed = static_cast<uint64_t>(seed);
          o.network_bytes_per_second = net.bytes_per_second;
          o.tell_hosts = row.tell_hosts;
          o.scheduler.locality.wait = row.wait;
          o.scheduler.speculation.enabled = spec;
          SimulationResult r = Simulate(o);
          sum += r.job_seconds;
          lo = std::min(lo, r.job_seconds);
          hi = std::max(hi, r.job_seconds);
          copies += r.progress.speculative_copies;
          local += r.local_reads;
          remote += r.remote_reads;
        }
        const double mean = sum / seeds;
        if (!row.tell_hosts) blind = mean;
        std::printf("| %s | %s | %s | %.0f (%.0f-%.0f) | %.3fx | %.0f | %.1f%% |\n", net.name,
                    row.name, spec ? "on" : "off", mean, lo, hi, mean / blind,
                    static_cast<double>(copies) / seeds,
                    100.0 * local / std::max<uint64_t>(1, local + remote));
      }
    }
  }
  SimulationOptions none;
  none.slow_rank_fraction = 0;
  std::printf("\n(no slow ranks, 10 GbE, speculation, 3 s wait, seed 1: %.0f s)\n",
              Simulate(none).job_seconds);
}

}  // namespace
}  // namespace sluice::dist

int main(int argc, char** argv) {
  double job_seconds = 2;
  uint64_t records = 400000;
  int seeds = 20;
  bool simulation_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--simulation-only")) simulation_only = true;
    if (i + 1 >= argc) break;
    if (!std::strcmp(argv[i], "--job-seconds")) job_seconds = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--records")) records = std::stoull(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seeds")) seeds = std::max(1, std::stoi(argv[i + 1]));
  }
  std::printf(
      "# sluice distributed jobs\n\ncommand: build/bin/dist_bench --job-seconds %.1f --records "
      "%llu --seeds %d%s\n",
      job_seconds, static_cast<unsigned long long>(records), seeds,
      simulation_only ? " --simulation-only" : "");
  if (!simulation_only) {
    // 64: the default, 16 tasks per rank
    sluice::dist::Speculation({8, 20, 40, 64, 100, 400}, job_seconds);
    sluice::dist::Skew(records);
  }
  sluice::dist::SimulationTable(seeds);
  return 0;
}

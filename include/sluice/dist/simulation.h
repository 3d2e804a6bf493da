// A distributed job simulated on a FakeClock: the real Scheduler (same code as a real job)
// against simulated ranks, so decisions at 1,000 ranks are measured on one machine
// (docs/dist.md, "Beyond this machine"). Deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>

#include "sluice/dist/scheduler.h"

namespace sluice::dist {

struct SimulationOptions {
  int ranks = 1000;
  int ranks_per_node = 4;  // nodes = ranks / ranks_per_node
  uint64_t tasks = 10000;
  // A task's time on a normal rank reading its input locally: log-normal with this median
  // and sigma (of the underlying normal).
  double median_task_seconds = 10;
  double sigma = 0.5;
  // round(fraction x ranks) ranks, chosen at random, run everything `slow_factor` x slower.
  double slow_rank_fraction = 0.01;
  double slow_factor = 5;
  // Each task's input lives on `replicas` distinct random nodes (HDFS's default 3); 0: no
  // locality (inputs equally far from every rank).
  int replicas = 3;
  // A task reading its input from another node takes this factor longer.
  double remote_factor = 1.5;
  uint64_t seed = 1;
  SchedulerOptions scheduler;
};

struct SimulationResult {
  double job_seconds = 0;
  JobProgress progress;
  uint64_t slow_ranks = 0;
};

SimulationResult Simulate(const SimulationOptions& options);

}  // namespace sluice::dist

// A distributed job simulated on a FakeClock: the real Scheduler (same code as a real job)
// against simulated ranks, so decisions at 1,000 ranks are measured on one machine
// (docs/dist.md, "Benchmarks": the simulation table and its model). Deterministic for a seed.
//
// The model of a task: compute, then its input read. Compute is log-normal on a normal rank;
// the read is `task_bytes` at the rank's local disk rate when one of the input's replicas is
// on the rank's node, and otherwise at min(disk, network) (the bytes come off another node's
// disk, through this rank's share of its node's link). A slow rank is slower at both. Whether
// a read is local is decided here, from where the simulation put the replicas, not from what
// the scheduler believed: so a scheduler that ignores locality pays for it.
#pragma once

#include <cstdint>
#include <string>

#include "sluice/dist/scheduler.h"

namespace sluice::dist {

struct SimulationOptions {
  int ranks = 1000;
  int ranks_per_node = 4;  // nodes = ranks / ranks_per_node
  uint64_t tasks = 10000;
  // A task's compute time on a normal rank: log-normal with this median and sigma (of the
  // underlying normal).
  double median_task_seconds = 10;
  double sigma = 0.5;
  // round(fraction x ranks) ranks, chosen at random, run everything `slow_factor` x slower.
  double slow_rank_fraction = 0.01;
  double slow_factor = 5;
  // Each task's input lives on `replicas` distinct random nodes (HDFS's default 3); 0: no
  // locality (inputs equally far from every rank, read at the network rate).
  int replicas = 3;
  // The input of a task and the rates it is read at, per rank. Defaults: an HDFS block
  // (128 MiB); 200 MB/s of local disk per rank; a 10 GbE link per node shared by its 4 ranks
  // (312.5 MB/s each: remote reads are then disk-bound, as fast as local ones). 1 GbE per
  // node is 31.25 MB/s per rank.
  uint64_t task_bytes = uint64_t{128} << 20;
  double disk_bytes_per_second = 200e6;
  double network_bytes_per_second = 1.25e9 / 4;
  // Whether the scheduler is told the tasks' hosts. false: a locality-blind scheduler (tasks
  // in input order on whichever rank is free); reads are still local or remote by placement.
  bool tell_hosts = true;
  uint64_t seed = 1;
  SchedulerOptions scheduler;
};

struct SimulationResult {
  double job_seconds = 0;
  JobProgress progress;
  uint64_t slow_ranks = 0;
  // Attempts (speculative copies included) whose input was on their rank's node, and not.
  uint64_t local_reads = 0, remote_reads = 0;
};

SimulationResult Simulate(const SimulationOptions& options);

}  // namespace sluice::dist

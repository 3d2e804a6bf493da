// The scheduler's policies, each a small object it consults (shaped like arrow's
// S3RetryStrategy: a question and an answer, no I/O, no clock of its own), so each is tested
// alone and the scheduler stays a bookkeeper (docs/dist.md, "Scheduling").
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::dist {

// Speculative execution, as Spark's spark.speculation: once `quantile` of the tasks have
// finished, a task that has run longer than `multiplier` x the median duration of the
// finished ones (and at least `min_runtime`) gets a copy on an idle rank.
struct SpeculationOptions {
  bool enabled = true;       // Default: on (Hadoop's default; Spark's is off)
  double quantile = 0.75;    // Default: 0.75 (spark.speculation.quantile)
  double multiplier = 1.5;   // Default: 1.5 (spark.speculation.multiplier)
  double min_runtime = 0.1;  // Default: 0.1 s (spark.speculation.minTaskRuntime)
};

// The durations of finished tasks, with their median in O(log n) per task (two heaps).
class DurationStats {
 public:
  void Add(double seconds);
  uint64_t count() const { return low_.size() + high_.size(); }
  double median() const;  // 0 when empty

 private:
  std::priority_queue<double> low_;                                        // lower half
  std::priority_queue<double, std::vector<double>, std::greater<>> high_;  // upper half
};

class SpeculationPolicy {
 public:
  explicit SpeculationPolicy(SpeculationOptions options) : options_(options) {}
  // How long a task may run before it is a straggler, given the durations of the finished
  // tasks out of `total`; infinity while fewer than `quantile` of them have finished (or
  // when speculation is off).
  double StragglerThreshold(const DurationStats& finished, uint64_t total) const;
  const SpeculationOptions& options() const { return options_; }

 private:
  SpeculationOptions options_;
};

// Locality, as Spark's delay scheduling (spark.locality.wait): an idle rank takes a task
// whose input is on its node; when it has none, it takes a task with no preferred node;
// a task whose input is elsewhere it takes only once no task has been launched node-locally
// for `wait` seconds (every local launch restarts that wait), or when no queued task has
// its input on a node where the job has ranks (waiting could not help).
//
// Where a task's input is (TaskSpec::hosts) comes from three sources (dist/locality.h): HDFS
// block locations, each node's cache tier holdings, and files on node-local disks.
struct LocalityOptions {
  double wait = 3.0;  // Default: 3 s (spark.locality.wait). 0 turns the wait off.
  // A node whose cache tier holds at least this fraction of a task's input file prefers the
  // task. Default: 0.5 (the input "mostly" there). Above 1: never.
  double cache_fraction = 0.5;
  // The cache directory each node's holdings are read from. Default: "" =
  // io::cache::DefaultCacheDir(); a node without a cache there holds nothing.
  std::string cache_dir;
  // Inputs under these directories are node-local (each node has its own files there), in
  // addition to inputs on a file system that statfs reports as not shared (anything but NFS,
  // SMB/CIFS, Lustre, GPFS, CephFS, BeeGFS, AFS, 9p, FUSE). Default: none.
  std::vector<std::string> local_input_dirs;
};

class LocalityPolicy {
 public:
  explicit LocalityPolicy(LocalityOptions options) : options_(options) {}
  void OnLaunch(bool local, double now);
  void Start(double now) { last_local_launch_ = now; }
  // Whether an idle rank may take a task whose input is on another node, now.
  bool MayRunRemote(double now, bool any_local_candidate) const;
  // When MayRunRemote turns true by itself (infinity if it never does without an event).
  double RemoteAllowedAt() const { return last_local_launch_ + options_.wait; }
  const LocalityOptions& options() const { return options_; }

 private:
  LocalityOptions options_;
  double last_local_launch_ = 0;
};

// Retries of failed attempts (Spark's spark.task.maxFailures): errors that a rerun can
// cure (I/O errors, a lost transfer) are retried; errors of the data itself (a corrupt
// record, a bad argument) fail the job at once, as a rerun would fail the same way.
struct RetryOptions {
  int max_attempts = 4;  // Default: 4 (spark.task.maxFailures): 1 try + 3 retries
};

class RetryPolicy {
 public:
  explicit RetryPolicy(RetryOptions options) : options_(options) {}
  // Whether a task that has failed `failures` times, the last time with `error`, runs again.
  bool ShouldRetry(const Status& error, int failures) const;

 private:
  RetryOptions options_;
};

}  // namespace sluice::dist

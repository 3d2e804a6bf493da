// The unit of a distributed job: a task, and what the scheduler decides about it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::dist {

using TaskId = uint64_t;  // 0..n-1, the task's position in input order
using Rank = int;         // a worker's rank in the job's communicator

struct TaskSpec {
  TaskId id = 0;
  // Nodes (host names) holding the task's input: HDFS block locations, a node-local path,
  // a node's cache holdings. Empty: the input is equally far from every rank.
  std::vector<std::string> hosts;
  // The input exists only on `hosts` (a file on node-local disk): the task never runs on
  // another node, however long it waits. `hosts` must then name nodes of the job.
  bool only_on_hosts = false;
  uint64_t bytes = 0;  // input bytes, for progress and ETA
  // What the worker runs, opaque to the scheduler (e.g. a file and a byte range).
  std::string input;
};

// One copy of a task sent to a rank. A task has attempt 0, then retries and speculative
// copies numbered 1, 2, ... in the order they were started.
struct Assignment {
  Rank rank = 0;
  TaskId task = 0;
  int attempt = 0;
  bool speculative = false;  // a copy of a task that is still running elsewhere
  bool local = false;        // the rank's host holds the task's input
};

// What a finished attempt's output becomes: the first copy of a task to finish is committed,
// any later copy's output is discarded (so no output is ever duplicated or lost).
enum class Outcome { kCommitted, kDiscarded };

}  // namespace sluice::dist

// Options of a running pipeline (one Iterator): threads, memory budget, autotune, and what
// element-wise stages do with a bad record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::pipeline {

// What a stage does when one record fails (DESIGN.md, "Bad input never loses good data").
enum class ErrorPolicy {
  kRaise,       // Default: the error reaches the consumer, naming stage, shard and record
  kSkip,        // drop the record, count it in the stage's stats, continue
  kQuarantine,  // skip, and append the record's identity to PipelineOptions::quarantine_path
};
std::string_view ErrorPolicyName(ErrorPolicy policy);  // "raise", "skip", "quarantine"
Result<ErrorPolicy> ParseErrorPolicy(std::string_view name);

struct PipelineOptions {
  // Threads of the pipeline's one pool, shared by all stages. Default: 0 = one per CPU this
  // process may use (ThreadPool::DefaultThreads: affinity mask, cgroup CPU quota).
  uint32_t threads = 0;
  // Bytes all pipeline buffers (read-ahead, map windows, shuffle buffer, prefetch) may hold;
  // past it the pipeline stops running ahead (backpressure) instead of growing.
  // Default: 1 GiB.
  uint64_t memory_budget_bytes = uint64_t{1} << 30;
  // Adjust map parallelism, read concurrency and prefetch depth online (docs/pipeline.md,
  // "Autotune"). Only knobs left at kAutotune (-1) / 0 are tuned; explicit values are kept.
  // Default: true.
  bool autotune = true;
  // Default policy of element-wise stages (read, parse_example, map, filter) that do not set
  // their own. Default: raise.
  ErrorPolicy on_error = ErrorPolicy::kRaise;
  // Where quarantined record ids go, one line each: "<shard>\t<index>\t<stage>\t<message>".
  // Written through `quarantine_fs` (Default: the local file system); the file appears when
  // the iterator is destroyed or reaches the end (writes are atomic). Default: "".
  std::string quarantine_path;
  io::FileSystem* quarantine_fs = nullptr;
  // The epoch the iterator starts at, counted on from ReadOptions::epoch (a training loop
  // makes one iterator per epoch). Restore() takes the epoch from the state instead.
  // Default: 0.
  uint64_t epoch = 0;
};

}  // namespace sluice::pipeline

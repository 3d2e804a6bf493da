// Options of a running pipeline (one Iterator): threads, memory budget, autotune, and what
// element-wise stages do with a bad record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::pipeline {

// What a stage does when one record fails (docs/architecture.md, "Bad input never loses good
// data").
enum class ErrorPolicy {
  kRaise,       // Default: the error reaches the consumer, naming stage, shard and record
  kSkip,        // drop the record, count it in the stage's stats, continue
  kQuarantine,  // skip, and append the record's identity to PipelineOptions::quarantine_path
};
std::string_view ErrorPolicyName(ErrorPolicy policy);  // "raise", "skip", "quarantine"
Result<ErrorPolicy> ParseErrorPolicy(std::string_view name);

struct PipelineOptions;
// InvalidArgument naming the first option whose value cannot work.
Status CheckPipelineOptions(const PipelineOptions& options);

// The most threads a pipeline's pool may have (PipelineOptions::threads).
inline constexpr uint32_t kMaxPipelineThreads = 1024;

// Options are checked when an iterator is made (CheckPipelineOptions): values that cannot
// work are an InvalidArgument naming the option.
struct PipelineOptions {
  // Threads of the pipeline's one pool, shared by all stages, at most kMaxPipelineThreads.
  // Default: 0 = one per CPU this process may use (ThreadPool::DefaultThreads: affinity
  // mask, cgroup CPU quota).
  uint32_t threads = 0;
  // Bytes all pipeline buffers (read-ahead, map windows, shuffle buffer, prefetch) may hold;
  // past it the pipeline stops running ahead (backpressure) instead of growing. Must be > 0
  // (each stage still works on one chunk when the budget is smaller than that chunk).
  // Default: 1 GiB.
  uint64_t memory_budget_bytes = uint64_t{1} << 30;
  // Adjust map parallelism, read concurrency and prefetch depth online (docs/pipeline.md,
  // "Autotune"). Only knobs left at kAutotune (-1) / 0 are tuned; explicit values are kept.
  // Default: true.
  bool autotune = true;
  // Default policy of element-wise stages (read, parse_example, map, filter) that do not set
  // their own. Default: raise.
  ErrorPolicy on_error = ErrorPolicy::kRaise;
  // Where quarantined record ids go, one line each: "<shard>\t<index>\t<stage>\t<message>"
  // (index "-" for a damaged shard as a whole). Written through `quarantine_fs` (Default: the
  // local file system); opened when an iterator with a quarantining stage starts (a path
  // that cannot be written fails there), and appears when the iterator is destroyed or
  // reaches the end (writes are atomic), empty when nothing was quarantined. Default: "".
  std::string quarantine_path;
  io::FileSystem* quarantine_fs = nullptr;
  // The epoch the iterator starts at, counted on from ReadOptions::epoch (a training loop
  // makes one iterator per epoch). Restore() takes the epoch from the state instead.
  // Default: 0.
  uint64_t epoch = 0;
};

}  // namespace sluice::pipeline

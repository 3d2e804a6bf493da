// A FileSystem wrapper that adds seeded random latency to every operation, like a remote
// store's (arrow io/slow.h): the shared FileSystem tests run every backend under it, and
// benchmarks use it to show what latency does to a pipeline reading local files.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "sluice/io/file_system.h"

namespace sluice::io {

struct SlowOptions {
  // Each operation (open, stat, list, each read, each append, close, ...) first waits a
  // latency drawn uniformly from [min_latency, max_latency].
  std::chrono::microseconds min_latency{100};   // Default: 0.1 ms
  std::chrono::microseconds max_latency{2000};  // Default: 2 ms
  uint64_t seed = 1;                            // Default: 1 (runs repeat exactly per thread order)
};

// Wraps `base` (not owned; it must outlive the wrapper and its files). Reads through
// ReadAsync run the delayed blocking read on the context's executor, so callbacks still never
// run inside ReadAsync.
std::unique_ptr<FileSystem> NewSlowFileSystem(FileSystem* base, SlowOptions options = {});

}  // namespace sluice::io

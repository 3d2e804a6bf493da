// Iterator: a running pipeline. Owns the pipeline's thread pool, buffer pool and memory
// budget; Save() returns a small blob from which Restore() continues exactly where the
// consumer was, in O(1) (docs/pipeline.md, "State").
#pragma once

#include <memory>
#include <string>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/pipeline/element.h"
#include "sluice/pipeline/stats.h"

namespace sluice::pipeline {

class Iterator {
 public:
  class Impl;
  explicit Iterator(std::unique_ptr<Impl> impl);
  // Cancels all work of the pipeline and waits for its tasks (they stop at the next element;
  // documented bound: 100 ms unless a single map call takes longer). No leaks, no hang.
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element into *out (its storage is reused; tensors still referenced elsewhere,
  // e.g. by numpy, are left alone). false at the end of the stream. Not thread-safe: one
  // consumer thread.
  Result<bool> Next(Element* out);
  // State after the last element Next() returned. <= 4 KiB for global, block and none
  // shuffle modes; buffer mode and bucket_by_length add the record positions they hold.
  Result<std::string> Save() const;
  // Continues from a saved state: the stream from here is exactly what followed the Save.
  // Works on any iterator of the same dataset (same seed, same snapshot, same stages); the
  // rank and world size may differ (elastic resume; not for buffer shuffle mode).
  Status Restore(ByteView state);

  const Schema& schema() const;
  PipelineStats stats() const;
  // Human summary: stats().Report().
  std::string Report() const { return stats().Report(); }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::pipeline

// What a ParallelRunner needs around it in a unit test: a pool of `threads`, buffers, a
// memory budget of 1 GiB and a quarantine sink over a memory file system.
#pragma once

#include <memory>

#include "pipeline/context.h"
#include "sluice/base/thread_pool.h"
#include "sluice/io/file_system.h"
#include "sluice/pipeline/tensor.h"

namespace sluice::pipeline::testing {

struct RunnerTestContext {
  explicit RunnerTestContext(size_t threads) : pool(threads) {}

  PipelineOptions options;
  ThreadPool pool;
  std::shared_ptr<BufferPool> buffers = BufferPool::Create(1 << 20);
  MemoryBudget budget{1 << 30};
  std::unique_ptr<io::FileSystem> fs = io::NewMemoryFileSystem();
  QuarantineSink quarantine{fs.get(), ""};
  PipelineContext ctx{options, &pool, buffers.get(), &budget, &quarantine};
};

}  // namespace sluice::pipeline::testing

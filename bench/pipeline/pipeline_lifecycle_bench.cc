// Pipeline lifecycle benchmark: what starting, ending and repeating a pipeline costs.
//
// 1. Cancellation latency: pipelines busy at the moment the consumer destroys the iterator
//    (a slow map with parallelism 2, a full prefetch buffer, a reader in the middle of big
//    records from a shard file, a stage held back by the memory budget); the time
//    `Iterator` destruction takes, median and max over --runs runs per case. The contract
//    (docs/pipeline.md, "Cancellation") is 100 ms, unless one running user call takes longer.
// 2. The epoch boundary under repeat: the extra time per epoch of `repeat(E)` over a small
//    dataset against one epoch of the same elements, and fresh buffer allocations per epoch.
//
// Reproduce: cmake --build build --target pipeline_lifecycle_bench && ./build/bin/pipeline_lifecycle_bench
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sluice/format/shard_writer.h"
#include "sluice/io/file_system.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

template <typename T>
T Must(Result<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::abort();
  }
  return std::move(r).value();
}

void Must(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// `n` records of `bytes` bytes in 4 in-memory shards.
Dataset Records(size_t n, size_t bytes) {
  std::vector<std::vector<std::string>> shards(4);
  for (size_t i = 0; i < n; ++i) shards[i % 4].push_back(std::string(bytes, 'x'));
  return Dataset::FromSource(NewMemorySource(std::move(shards)));
}

Status Nop(Element*, const MapContext&) { return Status::OK(); }

// A map call of `ms` milliseconds that does not poll MapContext::cancelled(): the worst
// case, a long C++ call (a decoder) the pipeline cannot interrupt.
MapFn Busy(int ms) {
  return [ms](Element*, const MapContext&) {
    SleepMs(ms);
    return Status::OK();
  };
}

MapOptions Parallel(int parallelism, std::string name) {
  MapOptions o;
  o.parallelism = parallelism;
  o.name = std::move(name);
  return o;
}

// ---- 1. cancellation ----

struct CancelCase {
  std::string name;
  // Builds the pipeline and drives it into the busy state; the caller destroys it.
  std::function<std::unique_ptr<Iterator>()> start;
};

std::unique_ptr<Iterator> Started(const Dataset& ds, const PipelineOptions& o, int next_calls,
                                  int idle_ms) {
  auto it = Must(ds.MakeIterator(o));
  Element e;
  for (int i = 0; i < next_calls; ++i) {
    if (!Must(it->Next(&e))) std::abort();
  }
  SleepMs(idle_ms);  // the consumer "trains" while the pipeline runs ahead
  return it;
}

// A dataset dir of 8 records of 32 MiB each in `dir` (uncompressed, CRC-checked on read).
std::string BigRecordShards(const std::string& dir) {
  io::FileSystem* fs = io::LocalFileSystem();
  format::ShardWriterOptions wo;
  wo.record.codec = format::Codec::kNone;
  auto w = Must(format::ShardWriter::Open(fs, dir, wo));
  std::string record(32u << 20, 'r');
  for (int i = 0; i < 8; ++i) {
    record[0] = static_cast<char>('0' + i);
    Must(w->Write(record));
  }
  Must(w->Close());
  return dir;
}

std::vector<CancelCase> CancelCases(const std::string& big_dir) {
  PipelineOptions two;
  two.threads = 2;
  std::vector<CancelCase> cases;
  cases.push_back({"slow map (5 ms/element, not polling), parallelism 2", [two] {
                     Dataset ds = Records(4096, 64).Map(Busy(5), Parallel(2, "slow"));
                     return Started(ds.Batch(4).Prefetch(4), two, 2, 0);
                   }});
  cases.push_back({"slow map (40 ms/element, not polling), parallelism 2", [two] {
                     Dataset ds = Records(4096, 64).Map(Busy(40), Parallel(2, "slow"));
                     return Started(ds.Prefetch(2), two, 1, 0);
                   }});
  cases.push_back({"full prefetch(64), consumer not reading", [two] {
                     Dataset ds = Records(100'000, 64).Map(Nop, Parallel(2, "identity"));
                     return Started(ds.Batch(16).Prefetch(64), two, 1, 20);
                   }});
  cases.push_back({"reader inside 32 MiB records (shard file)", [two, big_dir] {
                     ReadOptions ro;
                     ro.paths = {big_dir};
                     ro.chunk_records = 1;
                     Dataset ds = Must(Dataset::Read(ro)).Repeat();
                     return Started(ds.Prefetch(2), two, 1, 0);
                   }});
  cases.push_back({"memory budget full (1 MiB), consumer not reading", [two] {
                     PipelineOptions o = two;
                     o.memory_budget_bytes = 1 << 20;
                     Dataset ds = Records(10'000, 64 << 10).Map(Nop, Parallel(2, "identity"));
                     return Started(ds.Batch(2).Prefetch(16), o, 1, 20);
                   }});
  return cases;
}

struct Latency {
  double median_ms = 0;
  double max_ms = 0;
};

Latency MeasureCancel(const CancelCase& c, int runs) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    std::unique_ptr<Iterator> it = c.start();
    Clock::time_point t0 = Clock::now();
    it.reset();
    ms.push_back(Ms(Clock::now() - t0));
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.back()};
}

// ---- 2. the epoch boundary under repeat ----

struct EpochGap {
  double gap_us = 0;                // extra wall time per epoch boundary
  double allocations_per_epoch = 0;  // fresh tensor buffers per epoch
};

// Seconds to drain `ds` (best of `reps`) and the fresh buffer allocations of the last pass.
double Drain(const Dataset& ds, int reps, uint64_t* allocations) {
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    PipelineOptions o;
    o.threads = 2;
    auto it = Must(ds.MakeIterator(o));
    Element e;
    Clock::time_point t0 = Clock::now();
    while (Must(it->Next(&e))) {
    }
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    *allocations = it->stats().buffer_allocations;
  }
  return best;
}

// `epochs` epochs of `n` records under repeat, against one epoch of n * epochs records: the
// same elements through the same stages, without the boundaries.
EpochGap MeasureEpochGap(size_t n, int epochs) {
  auto chain = [](Dataset ds) {
    return ds.Shuffle({}).Map(Nop, Parallel(kAutotune, "identity"));
  };
  uint64_t alloc_repeat = 0, alloc_flat = 0;
  double repeated = Drain(chain(Records(n, 64)).Repeat(epochs).Batch(32).Prefetch(), 3,
                          &alloc_repeat);
  double flat = Drain(chain(Records(n * static_cast<size_t>(epochs), 64)).Batch(32).Prefetch(), 3,
                      &alloc_flat);
  EpochGap g;
  g.gap_us = (repeated - flat) / epochs * 1e6;
  g.allocations_per_epoch =
      (static_cast<double>(alloc_repeat) - static_cast<double>(alloc_flat)) / epochs;
  return g;
}

int Main(int argc, char** argv) {
  bool json = false;
  int runs = 50;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = std::atoi(argv[++i]);
  }
  std::string big_dir = (std::filesystem::temp_directory_path() /
                         ("sluice-lifecycle-bench-" + std::to_string(getpid())))
                            .string();
  BigRecordShards(big_dir);
  std::vector<CancelCase> cases = CancelCases(big_dir);
  std::vector<Latency> latencies;
  for (const CancelCase& c : cases) latencies.push_back(MeasureCancel(c, runs));
  std::filesystem::remove_all(big_dir);
  const size_t n = 256;
  const int epochs = 2000;
  EpochGap gap = MeasureEpochGap(n, epochs);

  if (json) {
    std::printf("{\"runs\": %d, \"cancel_ms\": {", runs);
    for (size_t i = 0; i < cases.size(); ++i) {
      std::printf("%s\n  \"%s\": {\"median\": %.3f, \"max\": %.3f}", i ? "," : "",
                  cases[i].name.c_str(), latencies[i].median_ms, latencies[i].max_ms);
    }
    std::printf("},\n \"epoch_gap_us\": %.1f, \"allocations_per_epoch\": %.1f}\n", gap.gap_us,
                gap.allocations_per_epoch);
    return 0;
  }
  std::printf("Iterator destruction while busy, %d runs each, 2 threads\n", runs);
  std::printf("%-56s %10s %10s\n", "case", "median ms", "max ms");
  for (size_t i = 0; i < cases.size(); ++i) {
    std::printf("%-56s %10.3f %10.3f\n", cases[i].name.c_str(), latencies[i].median_ms,
                latencies[i].max_ms);
  }
  std::printf(
      "\nrepeat(%d) over %zu records -> map -> batch(32) -> prefetch vs one epoch of %zu:\n"
      "  %.1f us extra per epoch boundary, %.1f fresh buffers per epoch\n",
      epochs, n, n * static_cast<size_t>(epochs), gap.gap_us, gap.allocations_per_epoch);
  std::printf(
      "\nReproduce: cmake --build build --target pipeline_lifecycle_bench && ./build/bin/pipeline_lifecycle_bench\n");
  return 0;
}

}  // namespace
}  // namespace sluice::pipeline

int main(int argc, char** argv) { return sluice::pipeline::Main(argc, argv); }

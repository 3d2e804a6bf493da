// Pipeline lifecycle benchmark: what starting, ending and repeating a pipeline costs.
//
// 1. Cancellation latency: pipelines busy at the moment the consumer destroys the iterator
//    (a slow map with parallelism 2, a full prefetch buffer, a reader in the middle of big
//    records from a shard file, a stage held back by the memory budget); the time
//    `Iterator` destruction takes, median and max over --runs runs per case. The contract
//    (docs/pipeline.md, "Cancellation") is 100 ms, unless one running user call takes longer.
// 2. The epoch boundary under repeat (which rebuilds the stages below it every epoch): the
//    consumer's Next() that crosses into a new epoch against the other Next() calls, over a
//    small dataset with many epochs, and fresh buffer allocations per epoch.
//
// Reproduce: cmake --build build --target pipeline_lifecycle_bench &&
//            ./build/bin/pipeline_lifecycle_bench [--runs 50] [--json]
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
  Dataset ds;  // built once: its teardown (the records it holds) is not cancellation
  PipelineOptions options;
  int next_calls = 1;  // Next() calls before the consumer stops reading
  int idle_ms = 0;     // then it "trains" this long while the pipeline runs ahead
};

// Makes the iterator and drives it into the busy state; the caller destroys it.
std::unique_ptr<Iterator> Start(const CancelCase& c) {
  auto it = Must(c.ds.MakeIterator(c.options));
  Element e;
  for (int i = 0; i < c.next_calls; ++i) {
    if (!Must(it->Next(&e))) std::abort();
  }
  SleepMs(c.idle_ms);
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
  PipelineOptions small_budget = two;
  small_budget.memory_budget_bytes = 1 << 20;
  ReadOptions big;
  big.paths = {big_dir};
  big.chunk_records = 1;
  Dataset slow5 = Records(4096, 64).Map(Busy(5), Parallel(2, "slow"));
  Dataset slow40 = Records(4096, 64).Map(Busy(40), Parallel(2, "slow"));
  Dataset small = Records(100'000, 64).Map(Nop, Parallel(2, "identity"));
  Dataset large = Records(2000, 64 << 10).Map(Nop, Parallel(2, "identity"));
  return {
      {"slow map (5 ms/element, not polling), parallelism 2", slow5.Batch(4).Prefetch(4), two, 2,
       0},
      {"slow map (40 ms/element, not polling), parallelism 2", slow40.Prefetch(2), two, 1, 0},
      {"full prefetch(64), consumer not reading", small.Batch(16).Prefetch(64), two, 1, 20},
      {"reader inside 32 MiB records (shard file)", Must(Dataset::Read(big)).Repeat().Prefetch(2),
       two, 1, 0},
      {"memory budget full (1 MiB), consumer not reading", large.Batch(2).Prefetch(16),
       small_budget, 1, 20},
  };
}

struct Latency {
  double median_ms = 0;
  double max_ms = 0;
};

Latency MeasureCancel(const CancelCase& c, int runs) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    std::unique_ptr<Iterator> it = Start(c);
    Clock::time_point t0 = Clock::now();
    it.reset();
    ms.push_back(Ms(Clock::now() - t0));
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.back()};
}

// ---- 2. the epoch boundary under repeat ----

struct EpochGap {
  double boundary_us = 0;            // median Next() that crosses into a new epoch
  double regular_us = 0;             // median of the other Next() calls
  double epoch_ms = 0;               // wall time per epoch
  double allocations_per_epoch = 0;  // fresh tensor buffers per epoch, after the first
  uint32_t map_parallelism = 0;      // autotune's map tasks at the end
};

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// read(n records) -> shuffle -> map(identity, autotuned) -> repeat(epochs) -> batch(32), no
// prefetch, so the consumer sees the boundary: the Next() that crosses into a new epoch
// includes rebuilding the stages below repeat and restarting their read-ahead.
EpochGap MeasureEpochGap(size_t n, int epochs) {
  Dataset ds = Records(n, 64).Shuffle({}).Map(Nop, Parallel(kAutotune, "identity"));
  PipelineOptions o;
  o.threads = 2;
  auto it = Must(ds.Repeat(epochs).Batch(32).MakeIterator(o));
  std::vector<double> boundary, regular;
  uint64_t epoch = 0, allocations_after_first = 0;
  Element e;
  Clock::time_point start = Clock::now();
  for (;;) {
    Clock::time_point t0 = Clock::now();
    if (!Must(it->Next(&e))) break;
    double us = Ms(Clock::now() - t0) * 1e3;
    bool crossed = e.mark.epoch != epoch;
    (crossed ? boundary : regular).push_back(us);
    if (crossed && epoch == 0) allocations_after_first = it->stats().buffer_allocations;
    epoch = e.mark.epoch;
  }
  EpochGap g;
  g.epoch_ms = Ms(Clock::now() - start) / epochs;
  g.boundary_us = Median(boundary);
  g.regular_us = Median(regular);
  PipelineStats st = it->stats();
  g.allocations_per_epoch =
      static_cast<double>(st.buffer_allocations - allocations_after_first) / (epochs - 1);
  g.map_parallelism = st.stages[1].parallelism;
  return g;
}

int Main(int argc, char** argv) {
  bool json = false;
  int runs = 50;
  int only = -1;  // --case i: only cancellation case i (for profilers), nothing else
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--case") == 0 && i + 1 < argc) only = std::atoi(argv[++i]);
  }
  std::string big_dir = (std::filesystem::temp_directory_path() /
                         ("sluice-lifecycle-bench-" + std::to_string(getpid())))
                            .string();
  BigRecordShards(big_dir);
  std::vector<CancelCase> cases = CancelCases(big_dir);
  std::vector<Latency> latencies;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (only >= 0 && static_cast<size_t>(only) != i) continue;
    latencies.push_back(MeasureCancel(cases[i], runs));
  }
  std::filesystem::remove_all(big_dir);
  if (only >= 0) {
    std::printf("%s: median %.3f ms, max %.3f ms\n", cases[static_cast<size_t>(only)].name.c_str(),
                latencies[0].median_ms, latencies[0].max_ms);
    return 0;
  }
  const size_t n = 256;
  const int epochs = 2000;
  EpochGap gap = MeasureEpochGap(n, epochs);

  if (json) {
    std::printf("{\"runs\": %d, \"cancel_ms\": {", runs);
    for (size_t i = 0; i < cases.size(); ++i) {
      std::printf("%s\n  \"%s\": {\"median\": %.3f, \"max\": %.3f}", i ? "," : "",
                  cases[i].name.c_str(), latencies[i].median_ms, latencies[i].max_ms);
    }
    std::printf(
        "},\n \"epoch\": {\"boundary_next_us\": %.1f, \"regular_next_us\": %.1f, "
        "\"epoch_ms\": %.3f, \"allocations_per_epoch\": %.2f, \"map_parallelism\": %u}}\n",
        gap.boundary_us, gap.regular_us, gap.epoch_ms, gap.allocations_per_epoch,
        gap.map_parallelism);
    return 0;
  }
  std::printf("Iterator destruction while busy, %d runs each, 2 threads\n", runs);
  std::printf("%-56s %10s %10s\n", "case", "median ms", "max ms");
  for (size_t i = 0; i < cases.size(); ++i) {
    std::printf("%-56s %10.3f %10.3f\n", cases[i].name.c_str(), latencies[i].median_ms,
                latencies[i].max_ms);
  }
  std::printf(
      "\nread(%zu) -> shuffle -> map -> repeat(%d) -> batch(32), no prefetch:\n"
      "  Next() into a new epoch %.1f us (median), other Next() %.1f us; %.3f ms per epoch;\n"
      "  %.2f fresh buffers per epoch; map tasks at the end: %u\n",
      n, epochs, gap.boundary_us, gap.regular_us, gap.epoch_ms, gap.allocations_per_epoch,
      gap.map_parallelism);
  std::printf(
      "\nReproduce: cmake --build build --target pipeline_lifecycle_bench && ./build/bin/pipeline_lifecycle_bench\n");
  return 0;
}

}  // namespace
}  // namespace sluice::pipeline

int main(int argc, char** argv) { return sluice::pipeline::Main(argc, argv); }

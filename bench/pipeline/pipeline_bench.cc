// Pipeline engine benchmark: per-element overhead of read -> map(identity) -> batch(256) ->
// prefetch over small records with 1 and 2 threads, Iterator::Restore time at the start,
// middle and end of a 10M-record epoch, and peak RSS on a 1M vs a 10M-record dataset.
// bench/pipeline/pipeline_bench.py runs this binary (--json) next to a torch DataLoader and a
// plain Python generator doing the same work, and prints the ratio table.
//
// Reproduce: cmake --build build --target pipeline_bench && ./build/bin/pipeline_bench
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "pipeline/state.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kStages = 4;  // read, map, batch, prefetch
constexpr size_t kBatch = 256;
constexpr size_t kRecordBytes = 64;

// The value of a Result that must succeed in a benchmark.
template <typename T>
T Must(Result<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::abort();
  }
  return std::move(r).value();
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Records generated on the fly: 10M-record epochs without holding them.
class VirtualSource final : public RecordSource {
 public:
  VirtualSource(uint32_t shards, uint64_t per_shard) : counts_(shards, per_shard) {
    for (uint32_t s = 0; s < shards; ++s) names_.push_back("virtual-" + std::to_string(s));
  }
  const std::vector<uint64_t>& shard_records() const override { return counts_; }
  const std::string& shard_name(uint32_t s) const override { return names_[s]; }
  Result<ByteView> Read(uint32_t shard, uint64_t index, std::string* scratch) const override {
    scratch->assign(kRecordBytes, static_cast<char>('a' + (shard + index) % 26));
    return ByteView(*scratch);
  }

 private:
  std::vector<uint64_t> counts_;
  std::vector<std::string> names_;
};

std::shared_ptr<RecordSource> MemoryRecords(size_t n) {
  std::vector<std::vector<std::string>> shards(16);
  for (size_t i = 0; i < n; ++i) shards[i % 16].push_back(std::string(kRecordBytes, 'x'));
  return NewMemorySource(std::move(shards));
}

Dataset Chain(std::shared_ptr<RecordSource> source, bool shuffle) {
  Dataset ds = Dataset::FromSource(std::move(source));
  if (shuffle) ds = ds.Shuffle({ShuffleMode::kGlobal, 1, 4, 0});
  MapOptions identity;
  identity.name = "identity";
  return ds.Map([](Element*, const MapContext&) { return Status::OK(); }, identity)
      .Batch(kBatch)
      .Prefetch(2);
}

// Best of `reps` full passes; returns seconds per element.
double PerElement(std::shared_ptr<RecordSource> source, size_t n, uint32_t threads, bool shuffle,
                  int reps) {
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    PipelineOptions o;
    o.threads = threads;
    auto it = Must(Chain(source, shuffle).MakeIterator(o));
    Element e;
    size_t seen = 0;
    Clock::time_point t0 = Clock::now();
    while (Must(it->Next(&e))) seen += static_cast<size_t>(e.tensors[0].shape()[0]);
    double s = Since(t0);
    if (seen != n) std::abort();
    best = std::min(best, s / static_cast<double>(n));
  }
  return best;
}

// Restore of the full pipeline at global position `consumed` of a 10M-record epoch, plus
// the first batch after it. Median of 21.
double RestoreSeconds(uint64_t consumed) {
  auto source = std::make_shared<VirtualSource>(100, 100'000);
  Dataset ds = Chain(source, true);
  PipelineOptions o;
  o.threads = 2;
  auto first = Must(ds.MakeIterator(o));
  StateWriter w = Must(StateReader::Parse(Must(first->Save()))).ToWriter();
  w.PutU64("0.read", "consumed", consumed);
  std::string state = w.Finish();
  std::vector<double> times;
  for (int i = 0; i < 21; ++i) {
    auto it = Must(ds.MakeIterator(o));
    Element e;
    Clock::time_point t0 = Clock::now();
    if (!it->Restore(state).ok()) std::abort();
    Must(it->Next(&e));
    times.push_back(Since(t0));
  }
  std::nth_element(times.begin(), times.begin() + 10, times.end());
  return times[10];
}

// Peak RSS (KiB) of a child process that runs 2000 batches of a globally shuffled pipeline
// over `records` virtual records.
long PeakRssKiB(uint64_t records) {
  pid_t pid = fork();
  if (pid == 0) {
    auto source = std::make_shared<VirtualSource>(100, records / 100);
    PipelineOptions o;
    o.threads = 2;
    auto it = Must(Chain(source, true).MakeIterator(o));
    Element e;
    for (int i = 0; i < 2000 && Must(it->Next(&e)); ++i) {
    }
    it.reset();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    _exit(static_cast<int>(std::min<long>(ru.ru_maxrss / 1024, 255)));  // MiB in the exit code
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) * 1024L : -1;
}

int Main(int argc, char** argv) {
  bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  if (argc > 1 && std::strcmp(argv[1], "--overhead-only") == 0) {  // for profilers
    const size_t n = 2'000'000;
    uint32_t threads = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 1;
    std::printf("%.1f ns / element\n", PerElement(MemoryRecords(n), n, threads, false, 5) * 1e9);
    return 0;
  }
  // Before any thread exists (fork).
  long rss_small = PeakRssKiB(1'000'000);
  long rss_large = PeakRssKiB(10'000'000);

  const size_t n = 2'000'000;
  auto records = MemoryRecords(n);
  double t1 = PerElement(records, n, 1, false, 3);
  double t2 = PerElement(records, n, 2, false, 3);
  double s1 = PerElement(records, n, 1, true, 3);
  double s2 = PerElement(records, n, 2, true, 3);
  double r0 = RestoreSeconds(0), rmid = RestoreSeconds(5'000'000), rend = RestoreSeconds(9'999'000);

  if (json) {
    std::printf(
        "{\"records\": %zu, \"record_bytes\": %zu, \"batch\": %zu, \"stages\": %d,\n"
        " \"ns_per_element\": {\"1\": %.1f, \"2\": %.1f},\n"
        " \"ns_per_element_global_shuffle\": {\"1\": %.1f, \"2\": %.1f},\n"
        " \"restore_ms\": {\"start\": %.3f, \"middle\": %.3f, \"end\": %.3f},\n"
        " \"peak_rss_mib\": {\"1M\": %ld, \"10M\": %ld}}\n",
        n, kRecordBytes, kBatch, kStages, t1 * 1e9, t2 * 1e9, s1 * 1e9, s2 * 1e9, r0 * 1e3,
        rmid * 1e3, rend * 1e3, rss_small / 1024, rss_large / 1024);
    return 0;
  }
  std::printf("read -> map(identity) -> batch(%zu) -> prefetch, %zu records of %zu bytes\n\n",
              kBatch, n, kRecordBytes);
  std::printf("%-28s %14s %18s\n", "threads", "ns / element", "ns / element/stage");
  std::printf("%-28s %14.1f %18.1f\n", "1 (shard order)", t1 * 1e9, t1 * 1e9 / kStages);
  std::printf("%-28s %14.1f %18.1f\n", "2 (shard order)", t2 * 1e9, t2 * 1e9 / kStages);
  std::printf("%-28s %14.1f %18.1f\n", "1 (global shuffle)", s1 * 1e9, s1 * 1e9 / kStages);
  std::printf("%-28s %14.1f %18.1f\n", "2 (global shuffle)", s2 * 1e9, s2 * 1e9 / kStages);
  std::printf("\nRestore + first batch, 10M-record epoch (median of 21):\n");
  std::printf("  start %.3f ms   middle %.3f ms   end %.3f ms\n", r0 * 1e3, rmid * 1e3, rend * 1e3);
  std::printf("\nPeak RSS, 2000 batches, global shuffle: 1M records %ld MiB, 10M records %ld MiB\n",
              rss_small / 1024, rss_large / 1024);
  std::printf(
      "\nReproduce: cmake --build build --target pipeline_bench && ./build/bin/pipeline_bench\n");
  return 0;
}

}  // namespace
}  // namespace sluice::pipeline

int main(int argc, char** argv) { return sluice::pipeline::Main(argc, argv); }

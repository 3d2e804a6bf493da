// Restore cost and RecordAt throughput of the orders on a 10M-record snapshot (100 shards x
// 100k records; in chunks mode 10,000 chunks of 1,000 records, the default lanes and window
// of 1 MiB chunks under a 1 GiB budget), against the usual alternative: materialising the
// epoch's permutation as an array (torch's DistributedSampler does randperm(N) every epoch),
// which costs O(N) time and memory on every restore.
//
// Reproduce: cmake --build build --target restore_bench && ./build/bin/restore_bench
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "sluice/pipeline/global_order.h"

namespace sluice::pipeline {
namespace {

constexpr uint64_t kShards = 100;
constexpr uint64_t kShardRecords = 100'000;
constexpr uint64_t kRecords = kShards * kShardRecords;
constexpr uint32_t kWorld = 8;
constexpr uint32_t kRank = 3;
constexpr uint64_t kFetch = 1000;  // samples fetched after a restore

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Keeps results alive so the compiler cannot drop the work.
volatile uint64_t g_sink = 0;

// Median of `reps` timings of fn(), in seconds.
template <typename Fn>
double MedianSeconds(int reps, Fn&& fn) {
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const Clock::time_point start = Clock::now();
    fn();
    times.push_back(SecondsSince(start));
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

constexpr uint64_t kChunkRecords = 1000;

OrderOptions Options(ShuffleMode mode) {
  OrderOptions o{mode, /*seed=*/42, 4};
  if (mode == ShuffleMode::kChunks) {
    const uint64_t chunks = kRecords / kChunkRecords;
    const ChunkWindow w =
        ResolveChunkWindow(chunks, chunks << 20, ChunkCacheCapacity(1ull << 30), {});
    o.lanes = w.lanes;
    o.lane_window = w.lane_window;
  }
  return o;
}

// The snapshot's chunks (chunks mode): a property of the dataset, computed once.
std::shared_ptr<const std::vector<uint64_t>> ChunkStarts() {
  static const auto starts = [] {
    auto s = std::make_shared<std::vector<uint64_t>>();
    for (uint64_t id = 0; id <= kRecords; id += kChunkRecords) s->push_back(id);
    return s;
  }();
  return starts;
}

GlobalOrder MakeOrder(ShuffleMode mode) {
  return GlobalOrder(std::vector<uint64_t>(kShards, kShardRecords), Options(mode), 3,
                     mode == ShuffleMode::kChunks ? ChunkStarts() : nullptr);
}

// What a restore does: rebuild the epoch's order from the snapshot, take this rank's slice at
// the saved global position and produce the next kFetch records.
double RestoreSeconds(ShuffleMode mode, uint64_t start) {
  return MedianSeconds(101, [&] {
    GlobalOrder order = MakeOrder(mode);
    RankSlice slice(&order, ShardingOptions{kRank, kWorld, Remainder::kDrop}, start);
    uint64_t sum = 0;
    for (uint64_t k = 0; k < std::min(kFetch, slice.size()); ++k) sum += slice.RecordAt(k);
    g_sink = sum;
  });
}

// The peer: a materialised permutation of all records, then the same kFetch lookups.
std::vector<uint64_t> MaterialisedOrder() {
  std::vector<uint64_t> order(kRecords);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(42);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

double MaterialisedRestoreSeconds(uint64_t start) {
  return MedianSeconds(5, [&] {
    std::vector<uint64_t> order = MaterialisedOrder();
    uint64_t sum = 0;
    for (uint64_t k = 0; k < kFetch && start + kRank + k * kWorld < kRecords; ++k) {
      sum += order[start + kRank + k * kWorld];
    }
    g_sink = sum;
  });
}

void PrintRestoreTable() {
  const uint64_t starts[] = {0, kRecords / 2, kRecords - kFetch * kWorld};
  const char* names[] = {"start", "middle", "end"};
  std::printf(
      "Restore: build order + rank slice (rank %u of %u) at a saved position, then fetch "
      "%llu records; median\n",
      kRank, kWorld, static_cast<unsigned long long>(kFetch));
  std::printf("%-8s %12s %12s %12s %12s %14s %14s %14s\n", "position", "global us", "block us",
              "chunks us", "array ms", "array/global", "array/block", "array/chunks");
  for (int i = 0; i < 3; ++i) {
    const double global = RestoreSeconds(ShuffleMode::kGlobal, starts[i]);
    const double block = RestoreSeconds(ShuffleMode::kBlock, starts[i]);
    const double chunks = RestoreSeconds(ShuffleMode::kChunks, starts[i]);
    const double array = MaterialisedRestoreSeconds(starts[i]);
    std::printf("%-8s %12.1f %12.1f %12.1f %12.1f %13.0fx %13.0fx %13.0fx\n", names[i],
                global * 1e6, block * 1e6, chunks * 1e6, array * 1e3, array / global, array / block,
                array / chunks);
  }
  const OrderOptions c = Options(ShuffleMode::kChunks);
  std::printf("chunks mode: %llu chunks, %u lanes x %llu chunks per lane window\n",
              static_cast<unsigned long long>(kRecords / kChunkRecords), c.lanes,
              static_cast<unsigned long long>(c.lane_window));
}

// ns per RecordAt over a whole epoch read through a rank slice (world 1: every position).
double NanosPerRecord(ShuffleMode mode) {
  GlobalOrder order = MakeOrder(mode);
  RankSlice slice(&order, ShardingOptions{}, 0);
  const Clock::time_point start = Clock::now();
  uint64_t sum = 0;
  for (uint64_t k = 0; k < slice.size(); ++k) sum += slice.RecordAt(k);
  g_sink = sum;
  return SecondsSince(start) * 1e9 / static_cast<double>(slice.size());
}

void PrintThroughputTable() {
  std::vector<uint64_t> array = MaterialisedOrder();
  const Clock::time_point start = Clock::now();
  uint64_t sum = 0;
  for (uint64_t p = 0; p < kRecords; ++p) sum += array[p];
  g_sink = sum;
  const double array_ns = SecondsSince(start) * 1e9 / kRecords;

  std::printf("\nRecordAt throughput over one epoch of %llu records\n",
              static_cast<unsigned long long>(kRecords));
  std::printf("%-8s %10s %18s %16s\n", "mode", "ns/call", "Mrecords/s", "state bytes");
  const uint64_t array_bytes = kRecords * sizeof(uint64_t);
  const uint64_t chunks = kRecords / kChunkRecords;
  for (ShuffleMode mode :
       {ShuffleMode::kNone, ShuffleMode::kGlobal, ShuffleMode::kBlock, ShuffleMode::kChunks}) {
    const double ns = NanosPerRecord(mode);
    // Order state beyond the snapshot's own counts: keys, plus O(shards) in block mode and
    // O(chunks) in chunks mode (slot -> chunk, slot prefix sums).
    uint64_t bytes = sizeof(Permutation);
    if (mode == ShuffleMode::kBlock) bytes += kShards * 4 + (kShards + 1) * 8 + 8;
    if (mode == ShuffleMode::kChunks) bytes += chunks * 4 + (chunks + 1) * 8;
    std::printf("%-8s %10.1f %18.1f %16llu\n", std::string(ShuffleModeName(mode)).c_str(), ns,
                1e3 / ns, static_cast<unsigned long long>(bytes));
  }
  std::printf("%-8s %10.1f %18.1f %16llu   (materialised array, sequential reads)\n", "array",
              array_ns, 1e3 / array_ns, static_cast<unsigned long long>(array_bytes));
}

}  // namespace
}  // namespace sluice::pipeline

int main() {
  std::printf("sluice order benchmark: %llu shards x %llu records\n\n",
              static_cast<unsigned long long>(sluice::pipeline::kShards),
              static_cast<unsigned long long>(sluice::pipeline::kShardRecords));
  sluice::pipeline::PrintRestoreTable();
  sluice::pipeline::PrintThroughputTable();
  std::printf(
      "\nReproduce: cmake --build build --target restore_bench && "
      "./build/bin/restore_bench\n");
  return 0;
}

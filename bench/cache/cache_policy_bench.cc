// Cache eviction policies on the order's real chunk reads (docs/cache.md, "Eviction" and
// "Across nodes"). A dataset of zstd shards (in memory) is planned by the chunk-aware order
// for 3 epochs, and the reads replayed, without disks or network (hit rates and remote bytes
// do not depend on the store's speed), through a cache of 25/50/75/100% of the dataset:
//   future  sluice's policy as the read stage drives it: at each epoch start the plan of
//           this epoch and the next (MIN from the known future, current window protected)
//   lru     the same reads through an LRU (what a page cache or Mosaic/LitData's cache does)
//   min     Belady's MIN knowing all 3 epochs, no protection: the optimum
// Then the remote-read amplification of N nodes from cold: the bytes each node's ranks'
// plans need (each distinct chunk once per node) summed over nodes, over the dataset's bytes.
//
// Reproduce: cmake --build build --target cache_policy_bench && ./build/bin/cache_policy_bench
//            [--mb 32] [--record-bytes 1024] [--chunk-kb 64] [--window-chunks 0]
//            [--memory-mb 64]
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pipeline/cache_hooks.h"
#include "sluice/base/random.h"
#include "sluice/format/record_writer.h"
#include "sluice/io/cache/eviction.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

using io::cache::ChunkId;
using pipeline::NodeNeed;

template <typename T>
T Must(Result<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

struct Config {
  uint64_t mb = 32;
  uint64_t record_bytes = 1024;
  uint64_t chunk_kb = 64;
  uint64_t window_chunks = 0;  // 0: sluice's default, from the memory budget
  uint64_t memory_mb = 64;
};

constexpr int kEpochs = 3;
constexpr int kShards = 16;

// Records of hex digits (zstd halves them) in kShards shards of /data.
void WriteDataset(io::FileSystem* fs, const Config& c) {
  if (!fs->CreateDirs("/data").ok()) std::exit(1);
  const uint64_t records = (c.mb << 20) / c.record_bytes;
  std::string r(c.record_bytes, '\0');
  for (int s = 0; s < kShards; ++s) {
    format::RecordWriterOptions o;
    o.codec = format::Codec::kZstd;
    o.zstd_frame_bytes = c.chunk_kb << 10;  // a frame per chunk (a larger frame is one chunk)
    auto w =
        Must(format::RecordWriter::Open(fs, "/data/part-" + std::to_string(s) + ".tfrecord", o));
    for (uint64_t i = s; i < records; i += kShards) {
      for (size_t k = 0; k < r.size(); ++k) r[k] = "0123456789abcdef"[Mix64(i * 131 + k) & 15];
      if (!w->Write(r).ok()) std::exit(1);
    }
    if (!w->Close().ok()) std::exit(1);
  }
}

struct Read {
  ChunkId id;
  uint64_t bytes = 0;
  uint64_t window = 0;
};

// One epoch of the node holding global ranks [first, first + ranks) of `world`, merged as
// the read stage announces it, windows numbered from `first_window`.
std::vector<Read> EpochReads(const pipeline::Dataset& shuffled, const pipeline::PipelineOptions& p,
                             uint64_t epoch, uint32_t first, uint32_t ranks, uint32_t world,
                             uint64_t first_window) {
  std::vector<pipeline::ChunkPlan> plans;
  for (uint32_t r = first; r < first + ranks; ++r) {
    plans.push_back(Must(shuffled.Shard(r, world).ChunkPlanFor(epoch, p)));
  }
  std::vector<Read> out;
  for (const NodeNeed& n : pipeline::MergeNodePlans(std::move(plans), first_window)) {
    const std::string key = std::to_string(n.need.shard) + "@" +
                            std::to_string(n.need.info.file_offset) + "+" +
                            std::to_string(n.need.info.file_bytes);
    out.push_back(Read{io::cache::ChunkIdOf(key), n.need.info.file_bytes, n.window});
  }
  return out;
}

struct Outcome {
  double hit_rate[kEpochs] = {};
  uint64_t remote_bytes = 0;
};

Outcome Replay(io::cache::EvictionPolicy* policy, uint64_t capacity,
               const std::vector<std::vector<Read>>& epochs,
               const std::function<void(int epoch)>& at_epoch_start) {
  io::cache::CacheSimulator sim(policy, capacity);
  Outcome out;
  for (int e = 0; e < kEpochs; ++e) {
    if (at_epoch_start) at_epoch_start(e);
    const uint64_t hits = sim.hits(), reads = sim.hits() + sim.misses();
    for (const Read& r : epochs[e]) sim.Access(r.id, r.bytes);
    out.hit_rate[e] = static_cast<double>(sim.hits() - hits) /
                      std::max<uint64_t>(1, sim.hits() + sim.misses() - reads);
  }
  out.remote_bytes = sim.miss_bytes();
  return out;
}

std::vector<io::cache::PlannedUse> Uses(const std::vector<Read>& reads) {
  std::vector<io::cache::PlannedUse> uses;
  for (const Read& r : reads) uses.push_back({r.id, r.window});
  return uses;
}

void PolicyTable(const pipeline::Dataset& shuffled, const pipeline::PipelineOptions& p,
                 uint64_t dataset_bytes) {
  std::vector<std::vector<Read>> epochs;
  uint64_t next_window = 0;
  for (int e = 0; e < kEpochs + 1; ++e) {  // + the epoch after, which the last one announces
    epochs.push_back(EpochReads(shuffled, p, e, 0, 1, 1, next_window));
    next_window = epochs.back().back().window + 1;
  }
  std::printf("| cache | policy | hit rate e1 | e2 | e3 | remote MiB (3 epochs) | vs MIN |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int percent : {25, 50, 75, 100}) {
    const uint64_t capacity = dataset_bytes * percent / 100;
    // MIN: the whole future, one window per read, nothing protected.
    io::cache::FuturePolicy min({.lag_windows = 0});
    std::vector<io::cache::PlannedUse> all;
    for (int e = 0; e < kEpochs; ++e) {
      for (const Read& r : epochs[e]) all.push_back({r.id, all.size()});
    }
    min.SetPlan(all);
    const Outcome best = Replay(&min, capacity, epochs, {});
    io::cache::FuturePolicy future;
    const Outcome ours = Replay(&future, capacity, epochs, [&](int e) {
      std::vector<io::cache::PlannedUse> plan = Uses(epochs[e]);
      for (const auto& u : Uses(epochs[e + 1])) plan.push_back(u);
      future.SetPlan(plan);
    });
    io::cache::LruPolicy lru;
    const Outcome peer = Replay(&lru, capacity, epochs, {});
    for (auto [name, o] : {std::pair{"future (sluice)", &ours}, {"lru", &peer}, {"min", &best}}) {
      std::printf("| %d%% | %s | %.1f%% | %.1f%% | %.1f%% | %.1f | %.2fx |\n", percent, name,
                  100 * o->hit_rate[0], 100 * o->hit_rate[1], 100 * o->hit_rate[2],
                  static_cast<double>(o->remote_bytes) / (1 << 20),
                  static_cast<double>(o->remote_bytes) / std::max<uint64_t>(1, best.remote_bytes));
    }
  }
}

void AmplificationTable(const pipeline::Dataset& shuffled, const pipeline::PipelineOptions& p,
                        uint64_t dataset_bytes) {
  std::printf("\n| nodes x ranks | epoch | remote bytes / dataset (cold caches) |\n");
  std::printf("|---|---|---|\n");
  for (uint32_t nodes : {2u, 4u}) {
    for (uint32_t ranks : {1u, 2u, 4u}) {
      for (int e = 0; e < kEpochs; ++e) {
        uint64_t bytes = 0;
        for (uint32_t n = 0; n < nodes; ++n) {
          std::set<ChunkId> seen;
          for (const Read& r : EpochReads(shuffled, p, e, n * ranks, ranks, nodes * ranks, 0)) {
            if (seen.insert(r.id).second) bytes += r.bytes;
          }
        }
        std::printf("| %u x %u | %d | %.4fx |\n", nodes, ranks, e + 1,
                    static_cast<double>(bytes) / dataset_bytes);
      }
    }
  }
}

int Main(const Config& c) {
  std::unique_ptr<io::FileSystem> fs = io::NewMemoryFileSystem();
  WriteDataset(fs.get(), c);
  pipeline::ReadOptions ro;
  ro.paths = {"/data"};
  ro.fs = fs.get();
  ro.chunk_bytes = c.chunk_kb << 10;
  pipeline::ShuffleOptions so;
  so.seed = 1;
  so.window_chunks = c.window_chunks;
  const pipeline::Dataset shuffled = Must(pipeline::Dataset::Read(ro)).Shuffle(so);
  pipeline::PipelineOptions p;
  p.memory_budget_bytes = c.memory_mb << 20;
  auto chunks = Must(shuffled.Chunks());
  uint64_t dataset_bytes = 0;
  for (uint64_t i = 0; i < chunks->size(); ++i) dataset_bytes += chunks->Info(i).file_bytes;
  std::printf(
      "\n%llu MiB of %llu-byte records in %d zstd shards: %llu chunks of ~%llu KiB "
      "decoded, %.1f MiB on the remote; memory budget %llu MiB, window chunks %s\n\n",
      (unsigned long long)c.mb, (unsigned long long)c.record_bytes, kShards,
      (unsigned long long)chunks->size(), (unsigned long long)c.chunk_kb,
      static_cast<double>(dataset_bytes) / (1 << 20), (unsigned long long)c.memory_mb,
      c.window_chunks == 0 ? "default" : std::to_string(c.window_chunks).c_str());
  PolicyTable(shuffled, p, dataset_bytes);
  AmplificationTable(shuffled, p, dataset_bytes);
  std::printf(
      "\nReproduce: ./build/bin/cache_policy_bench --mb %llu --record-bytes %llu "
      "--chunk-kb %llu --window-chunks %llu --memory-mb %llu\n",
      (unsigned long long)c.mb, (unsigned long long)c.record_bytes, (unsigned long long)c.chunk_kb,
      (unsigned long long)c.window_chunks, (unsigned long long)c.memory_mb);
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  sluice::Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--mb")
      c.mb = v;
    else if (flag == "--record-bytes")
      c.record_bytes = v;
    else if (flag == "--chunk-kb")
      c.chunk_kb = v;
    else if (flag == "--window-chunks")
      c.window_chunks = v;
    else if (flag == "--memory-mb")
      c.memory_mb = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  return sluice::Main(c);
}

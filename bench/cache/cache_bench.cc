// Node-local cache benchmark (docs/cache.md). A dataset of zstd shards on local disk is read
// by the same pipeline (read -> shuffle -> batch) three ways in one run:
//   local        the shards read directly (the peer)
//   remote       the shards behind a simulated remote store (first-byte latency, bandwidth)
//                with the cache off
//   cache e1/e2  through the node-local cache in front of that remote: epoch 1 cold, epoch 2
//                warm (the default configuration a user gets for a remote path: cache on,
//                default options)
// and prints records/s and the ratio of each to the local peer (goal: warm >= 0.9x local).
//
// The remote is SimulatedRemoteFileSystem until the S3 file system lands (then --s3 URI).
//
// Reproduce: cmake --build build --target cache_bench && ./build/bin/cache_bench
//            [--mb 64] [--record-kb 4] [--latency-ms 20] [--remote-mbps 200]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "sluice/base/random.h"
#include "sluice/format/shard_writer.h"
#include "sluice/io/cache/cache.h"
#include "sluice/io/cache/simulated_remote.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

template <typename T>
T Must(Result<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}
void Must(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
}

struct Config {
  uint64_t mb = 64;
  uint64_t record_kb = 4;
  double latency_ms = 20;
  double remote_mbps = 200;
  std::string codec = "zstd";
};

// Records of random-looking bytes zstd halves (hex digits), so shards are realistic in size.
void WriteDataset(const std::string& dir, const Config& c) {
  format::ShardWriterOptions o;
  o.target_shard_bytes = 8 << 20;
  o.record.codec = Must(format::ParseCodec(c.codec));
  auto w = Must(format::ShardWriter::Open(io::LocalFileSystem(), dir, o));
  const uint64_t record = c.record_kb << 10;
  std::string r(record, '\0');
  for (uint64_t i = 0, n = (c.mb << 20) / (record / 2); i < n; ++i) {
    for (size_t k = 0; k < r.size(); ++k) r[k] = "0123456789abcdef"[Mix64(i * 131 + k) & 15];
    Must(w->Write(r));
  }
  Must(w->Close());
}

struct Run {
  double seconds = 0;
  uint64_t records = 0;
  std::optional<io::cache::CacheStats> cache;
};

Run Epoch(io::FileSystem* fs, const std::string& dir, std::optional<bool> cache,
          const std::string& cache_dir) {
  pipeline::ReadOptions o;
  o.paths = {dir};
  o.fs = fs;
  o.cache = cache;
  o.cache_dir = cache_dir;
  auto ds = Must(pipeline::Dataset::Read(o));
  auto it = Must(ds.Shuffle({.seed = 1}).Batch(64).MakeIterator());
  Run run;
  const auto start = Clock::now();
  pipeline::Element e;
  while (Must(it->Next(&e))) run.records += e.tensors[0].num_elements();
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  run.cache = it->stats().cache;
  return run;
}

void Print(const char* name, const Run& r, const Run& peer) {
  double rate = static_cast<double>(r.records) / r.seconds;
  double peer_rate = static_cast<double>(peer.records) / peer.seconds;
  std::printf("| %-28s | %10.0f | %6.2fx |", name, rate, rate / peer_rate);
  if (r.cache) {
    std::printf(" %5.1f%% | %9.1f |", 100 * r.cache->hit_rate(),
                static_cast<double>(r.cache->fetched_bytes) / (1 << 20));
  } else {
    std::printf("        |           |");
  }
  std::printf("\n");
}

int Main(const Config& c) {
  char tmpl[] = "/tmp/sluice_cache_bench_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  const std::string root = tmpl, data = root + "/data", cache_dir = root + "/cache";
  WriteDataset(data, c);
  io::cache::SimulatedRemoteOptions ro;
  ro.name = "s3";  // counts as remote: the cache is on by default
  ro.latency_seconds = c.latency_ms / 1000;
  ro.bytes_per_second = c.remote_mbps * 1e6;
  io::cache::SimulatedRemoteFileSystem remote(io::LocalFileSystem(), ro);

  Run local = Epoch(io::LocalFileSystem(), data, std::nullopt, "");
  Run uncached = Epoch(&remote, data, false, "");
  Run cold = Epoch(&remote, data, std::nullopt, cache_dir);
  io::cache::CacheOptions co;
  co.dir = cache_dir;
  Must(io::cache::SharedCache(co))->Drain();
  Run warm = Epoch(&remote, data, std::nullopt, cache_dir);
  Run local2 = Epoch(io::LocalFileSystem(), data, std::nullopt, "");

  std::printf(
      "\n%llu MiB of %llu KiB records in %s shards; simulated remote: %.0f ms first "
      "byte, %.0f MB/s per read\n\n",
      (unsigned long long)c.mb, (unsigned long long)c.record_kb, c.codec.c_str(), c.latency_ms,
      c.remote_mbps);
  std::printf(
      "| pipeline (read, shuffle, batch 64) | records/s | vs local | hit rate | fetched MiB |\n");
  std::printf("|---|---|---|---|---|\n");
  Print("local files (peer)", local, local);
  Print("remote, no cache", uncached, local);
  Print("remote + cache, epoch 1", cold, local);
  Print("remote + cache, epoch 2", warm, local);
  Print("local files again", local2, local);
  std::printf(
      "\nReproduce: ./build/bin/cache_bench --mb %llu --record-kb %llu --latency-ms %.0f "
      "--remote-mbps %.0f\n",
      (unsigned long long)c.mb, (unsigned long long)c.record_kb, c.latency_ms, c.remote_mbps);
  std::filesystem::remove_all(root);
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  sluice::Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    double v = std::atof(argv[i + 1]);
    if (k == "--mb") {
      c.mb = static_cast<uint64_t>(v);
    } else if (k == "--record-kb") {
      c.record_kb = static_cast<uint64_t>(v);
    } else if (k == "--latency-ms") {
      c.latency_ms = v;
    } else if (k == "--remote-mbps") {
      c.remote_mbps = v;
    } else if (k == "--codec") {
      c.codec = argv[i + 1];
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  return sluice::Main(c);
}

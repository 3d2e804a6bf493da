// Reads from S3 with sluice's S3 file system and prints one JSON line of measurements; the
// peers (boto3, curl --parallel) and the ratio table are in bench/s3/run.py.
//
//   s3_read_bench objects s3://bucket/prefix [--in-flight 64] [--repeat 3] [--reuse-buffers]
//       [--skip-suffix .idx] (objects whose name ends so are not read)
//       (--reuse-buffers: each read's bytes go into a buffer an earlier read of the run
//       gave back, as the chunk cache recycles its buffers, instead of a fresh one)
//       every object under the prefix, whole (8 MiB parallel ranged GETs), all submitted at
//       once and bounded by the engine's cap: {"bytes", "seconds", "mb_per_s", stats...}
//       (the best of --repeat rounds). With --serve: a round per line read on stdin, and a
//       JSON line per round (its own seconds and CPU), so that a driver can time a
//       long-lived reader's rounds in turn with other readers' (bench/s3/run.py).
//   s3_read_bench latency s3://bucket/object [--reads 2000] [--size 1048576]
//       [--concurrency 16] [--no-hedge] [--hedge-quantile Q (default: the engine's, 0.95)] [--seed 1]
//       random ranged reads of one object, `concurrency` at a time; per-read latency
//       quantiles and the engine's hedges: {"p50_ms", "p99_ms", "p999_ms", "extra", ...}
//
// AWS settings come from the environment (AWS_ENDPOINT_URL, keys), as for `sluice`.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "sluice/base/thread_pool.h"
#include "sluice/io/s3_file_system.h"

namespace {

using namespace sluice;      // NOLINT
using namespace sluice::io;  // NOLINT
using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode, uri;
  size_t in_flight = 64;
  int repeat = 3;
  int reads = 2000;
  uint64_t size = 1 << 20;
  int concurrency = 16;
  bool hedge = true;
  bool reuse_buffers = false;
  bool serve = false;
  std::string skip_suffix;
  uint64_t seed = 1;
  double hedge_quantile = 0;  // 0: the engine's default
};

// User + system CPU seconds of this process so far.
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "s3_read_bench: %s\n", why.c_str());
  std::exit(1);
}

Args Parse(int argc, char** argv) {
  if (argc < 3) Die("usage: s3_read_bench objects|latency s3://... [options]");
  Args a;
  a.mode = argv[1];
  a.uri = argv[2];
  for (int i = 3; i < argc; ++i) {
    std::string f = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die(f + " needs a value");
      return argv[++i];
    };
    if (f == "--in-flight")
      a.in_flight = std::stoul(next());
    else if (f == "--repeat")
      a.repeat = std::stoi(next());
    else if (f == "--reads")
      a.reads = std::stoi(next());
    else if (f == "--size")
      a.size = std::stoull(next());
    else if (f == "--concurrency")
      a.concurrency = std::stoi(next());
    else if (f == "--skip-suffix")
      a.skip_suffix = next();
    else if (f == "--reuse-buffers")
      a.reuse_buffers = true;
    else if (f == "--serve")
      a.serve = true;
    else if (f == "--no-hedge")
      a.hedge = false;
    else if (f == "--seed")
      a.seed = std::stoull(next());
    else if (f == "--hedge-quantile")
      a.hedge_quantile = std::stod(next());
    else
      Die("unknown option " + f);
  }
  return a;
}

std::unique_ptr<FileSystem> MakeFs(const Args& a, HttpEngine* engine) {
  auto config = ResolveAwsConfig(ProcessAwsConfigSources());
  if (!config.ok()) Die(config.status().ToString());
  S3Options o;
  o.aws = *config;
  o.engine = engine;
  o.hedge_reads = a.hedge;
  auto fs = NewS3FileSystem(o);
  if (!fs.ok()) Die(fs.status().ToString());
  return std::move(fs).value();
}

std::string StatsJson(const HttpEngineStats& s) {
  char buf[512];
  std::snprintf(
      buf, sizeof(buf),
      "\"requests\": %llu, \"attempts\": %llu, \"retries\": %llu, \"hedges\": %llu, "
      "\"hedges_won\": %llu, \"failed\": %llu, \"first_byte_p50_ms\": %.3f, "
      "\"first_byte_p95_ms\": %.3f",
      static_cast<unsigned long long>(s.requests), static_cast<unsigned long long>(s.attempts),
      static_cast<unsigned long long>(s.retries), static_cast<unsigned long long>(s.hedges),
      static_cast<unsigned long long>(s.hedges_won), static_cast<unsigned long long>(s.failed),
      s.first_byte_p50_ms, s.first_byte_p95_ms);
  return buf;
}

// Counts callbacks down and wakes the waiter.
class Latch {
 public:
  explicit Latch(size_t n) : left_(n) {}
  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t left_;
};

void Objects(const Args& a) {
  HttpEngineOptions eo;
  eo.max_in_flight = a.in_flight;
  HttpEngine engine(eo);
  auto fs = MakeFs(a, &engine);
  auto list = fs->List(a.uri);
  if (!list.ok()) Die(list.status().ToString());
  std::vector<FileInfo> paths;
  for (const auto& e : *list) {
    const bool skipped = !a.skip_suffix.empty() && e.path.size() >= a.skip_suffix.size() &&
                         e.path.compare(e.path.size() - a.skip_suffix.size(),
                                        a.skip_suffix.size(), a.skip_suffix) == 0;
    if (!e.is_directory && !skipped) paths.push_back(e);
  }
  if (paths.empty()) Die("no objects under " + a.uri);
  double best = 1e30, best_cpu = 1e30;
  uint64_t bytes = 0;
  std::mutex pool_mu;
  std::vector<std::string> pool;  // buffers given back (--reuse-buffers)
  IoContext context;
  if (a.reuse_buffers) {
    context.buffer = [&](size_t) {
      std::lock_guard<std::mutex> g(pool_mu);
      if (pool.empty()) return std::string();
      std::string s = std::move(pool.back());
      pool.pop_back();
      return s;
    };
  }
  // One round: every object read once; its seconds and CPU seconds.
  auto round = [&]() -> std::pair<double, double> {
    const double cpu_start = CpuSeconds();
    const auto start = Clock::now();
    // Each object opens from the listing, without a HEAD, as a pipeline opens a listed
    // dataset's shards (io::ListedFileSystem), 16 at a time; each read goes out as soon as
    // its file is open.
    std::vector<std::unique_ptr<RandomAccessFile>> files(paths.size());
    std::atomic<uint64_t> got{0};
    std::atomic<int> errors{0};
    Latch latch(paths.size());
    {
      ThreadPool opens(std::min<size_t>(16, paths.size()));
      for (size_t i = 0; i < paths.size(); ++i) {
        opens.Submit([&, i] {
          auto f = fs->OpenListedForRead(paths[i]);
          if (!f.ok()) Die(f.status().ToString());
          files[i] = std::move(*f);
          files[i]->ReadAsync(
              0, files[i]->size(),
              [&](Result<std::string> r) {
                if (r.ok()) {
                  got += r->size();
                  if (a.reuse_buffers) {
                    std::lock_guard<std::mutex> g(pool_mu);
                    pool.push_back(std::move(*r));
                  }
                } else {
                  ++errors;
                }
                latch.Done();
              },
              context);
        });
      }
    }
    latch.Wait();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (errors.load() > 0) Die(std::to_string(errors.load()) + " reads failed");
    bytes = got.load();
    return {seconds, CpuSeconds() - cpu_start};
  };
  if (a.serve) {
    for (std::string line; std::getline(std::cin, line);) {
      const auto [seconds, cpu] = round();
      std::printf("{\"mode\": \"objects\", \"bytes\": %llu, \"seconds\": %.4f, "
                  "\"cpu_seconds\": %.4f}\n",
                  static_cast<unsigned long long>(bytes), seconds, cpu);
      std::fflush(stdout);
    }
    return;
  }
  for (int r = 0; r < a.repeat; ++r) {
    const auto [seconds, cpu] = round();
    best = std::min(best, seconds);
    best_cpu = std::min(best_cpu, cpu);
  }
  std::printf(
      "{\"mode\": \"objects\", \"objects\": %zu, \"bytes\": %llu, \"seconds\": %.4f, "
      "\"cpu_seconds\": %.4f, \"mb_per_s\": %.1f, %s}\n",
      paths.size(), static_cast<unsigned long long>(bytes), best, best_cpu, bytes / best / 1e6,
      StatsJson(engine.stats()).c_str());
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[k];
}

void LatencyRun(const Args& a) {
  HttpEngineOptions eo;
  if (a.hedge_quantile > 0) eo.hedge.quantile = a.hedge_quantile;
  HttpEngine engine(eo);
  auto fs = MakeFs(a, &engine);
  auto file = fs->OpenForRead(a.uri);
  if (!file.ok()) Die(file.status().ToString());
  const uint64_t size = (*file)->size();
  if (size < a.size) Die("object smaller than --size");
  std::mt19937_64 rng(a.seed);
  std::vector<double> latency_ms(static_cast<size_t>(a.reads));
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, failures = 0;
  for (int i = 0; i < a.reads; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < a.concurrency; });
      ++in_flight;
    }
    const uint64_t offset = rng() % (size - a.size + 1);
    const auto start = Clock::now();
    (*file)->ReadAsync(offset, a.size, [&, i, start](Result<std::string> r) {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      std::lock_guard<std::mutex> lock(mu);
      latency_ms[static_cast<size_t>(i)] = ms;
      if (!r.ok() || r->size() != a.size) ++failures;
      --in_flight;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return in_flight == 0; });
  }
  if (failures > 0) Die(std::to_string(failures) + " reads failed");
  // The reads behind the tail (p99.9 is the 3rd-slowest of 3000): which ones, and how slow.
  std::vector<size_t> slowest(latency_ms.size());
  for (size_t i = 0; i < slowest.size(); ++i) slowest[i] = i;
  const size_t shown = std::min<size_t>(6, slowest.size());
  std::partial_sort(slowest.begin(), slowest.begin() + static_cast<std::ptrdiff_t>(shown),
                    slowest.end(), [&](size_t x, size_t y) { return latency_ms[x] > latency_ms[y]; });
  for (size_t k = 0; k < shown; ++k) {
    std::fprintf(stderr, "slow read %zu: %.1f ms\n", slowest[k], latency_ms[slowest[k]]);
  }
  const HttpEngineStats s = engine.stats();
  // Requests other than the reads themselves (the HEAD at open) are not part of "extra".
  const double extra = static_cast<double>(s.hedges) / a.reads;
  std::printf(
      "{\"mode\": \"latency\", \"hedge\": %s, \"reads\": %d, \"size\": %llu, "
      "\"p50_ms\": %.2f, \"p99_ms\": %.2f, \"p999_ms\": %.2f, \"max_ms\": %.2f, "
      "\"extra\": %.4f, %s}\n",
      a.hedge ? "true" : "false", a.reads, static_cast<unsigned long long>(a.size),
      Quantile(latency_ms, 0.5), Quantile(latency_ms, 0.99), Quantile(latency_ms, 0.999),
      Quantile(latency_ms, 1.0), extra, StatsJson(s).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  if (a.mode == "objects") {
    Objects(a);
  } else if (a.mode == "latency") {
    LatencyRun(a);
  } else {
    Die("mode must be objects or latency");
  }
  return 0;
}

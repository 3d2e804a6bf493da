// One process of a node for tests/python/test_cache_processes.py: reads every file of a
// directory through a cache directory, from a simulated remote (the same files behind a
// latency, reads logged to a file shared by all processes), and checks every byte.
//
// Usage: cache_tool --cache DIR --data DIR [--bytes N] [--block B] [--latency S]
//                   [--log FILE] [--threads T] [--seed S] [--kill-at EVENT] [--events]
// Output: one JSON line of the cache's figures; exit 1 if any byte was wrong or a read failed.
// --kill-at fetch|staged|published raises SIGKILL at that point of the first chunk's way into
// the cache (a crash); --events prints "event NAME" lines as they happen.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sluice/base/random.h"
#include "sluice/io/cache/cache.h"
#include "sluice/io/cache/cached_file_system.h"
#include "sluice/io/cache/simulated_remote.h"

using namespace sluice;
using namespace sluice::io;
using namespace sluice::io::cache;

namespace {

struct Piece {
  std::string path;
  uint64_t offset;
  uint64_t n;
};

int Run(std::map<std::string, std::string> args) {
  auto arg = [&](const char* k, const char* d) { return args.count(k) ? args[k] : std::string(d); };
  CacheOptions o;
  o.dir = arg("cache", "");
  o.capacity_bytes = std::stoull(arg("bytes", "0"));
  o.block_bytes = std::stoull(arg("block", "65536"));
  const std::string kill_at = arg("kill-at", "");
  // A crash at the first chunk's event is exact with one I/O thread: with four, a second
  // chunk could be staged between the event and the signal's delivery (1 run in 20).
  o.io_threads = kill_at.empty() ? 4 : 1;
  const bool events = args.count("events") > 0;
  o.on_event = [kill_at, events](std::string_view event) {
    if (events) {
      std::printf("event %.*s\n", static_cast<int>(event.size()), event.data());
      std::fflush(stdout);
    }
    if (event == kill_at) ::raise(SIGKILL);
  };
  auto cache = Cache::Open(o);
  if (!cache.ok()) {
    std::fprintf(stderr, "%s\n", cache.status().ToString().c_str());
    return 1;
  }
  SimulatedRemoteOptions ro;
  ro.latency_seconds = std::stod(arg("latency", "0"));
  ro.log_path = arg("log", "");
  SimulatedRemoteFileSystem remote(LocalFileSystem(), ro);
  CachedFileSystem fs(&remote, *cache);

  auto files = LocalFileSystem()->List(arg("data", "."));
  if (!files.ok()) return 1;
  std::vector<Piece> pieces;
  for (const FileInfo& f : *files) {
    for (uint64_t at = 0; at < f.size; at += o.block_bytes) {
      pieces.push_back({f.path, at, std::min<uint64_t>(o.block_bytes, f.size - at)});
    }
  }
  // Each process reads in its own order, so processes race for different chunks.
  const uint64_t seed = std::stoull(arg("seed", "0"));
  for (size_t i = pieces.size(); i > 1; --i) {
    std::swap(pieces[i - 1], pieces[Mix64(seed * 1000003 + i) % i]);
  }
  std::atomic<size_t> next{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::stoi(arg("threads", "2")); ++t) {
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < pieces.size();) {
        const Piece& p = pieces[i];
        auto cached = fs.OpenForRead(p.path);
        auto direct = LocalFileSystem()->OpenForRead(p.path);
        std::string a(p.n, '\0'), b(p.n, '\0');
        auto ra = cached.ok() ? (*cached)->Read(p.offset, p.n, a.data()) : cached.status();
        auto rb = (*direct)->Read(p.offset, p.n, b.data());
        if (!ra.ok() || !rb.ok() || *ra != *rb) {
          std::fprintf(stderr, "bad read %s@%llu: %s\n", p.path.c_str(),
                       static_cast<unsigned long long>(p.offset),
                       ra.ok() ? "bytes differ" : ra.status().ToString().c_str());
          ++bad;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  (*cache)->Drain();
  CacheStats s = (*cache)->stats();
  std::printf(
      "{\"reads\": %llu, \"hits\": %llu, \"joined\": %llu, \"misses\": %llu, \"fetches\": %llu, "
      "\"damaged\": %llu, \"lock_timeouts\": %llu, \"used\": %llu, \"capacity\": %llu, \"bad\": "
      "%d}\n",
      (unsigned long long)s.reads, (unsigned long long)s.hits, (unsigned long long)s.joined,
      (unsigned long long)s.misses, (unsigned long long)s.fetches, (unsigned long long)s.damaged,
      (unsigned long long)s.lock_timeouts, (unsigned long long)s.used_bytes,
      (unsigned long long)s.capacity_bytes, bad.load());
  return bad.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--", 2) != 0) {
      std::fprintf(stderr, "unexpected argument %s\n", argv[i]);
      return 2;
    }
    std::string key = argv[i] + 2;
    bool flag = i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0;
    args[key] = flag ? "1" : argv[++i];
  }
  if (!args.count("cache") || !args.count("data")) {
    std::fprintf(stderr, "usage: %s --cache DIR --data DIR [options]\n", argv[0]);
    return 2;
  }
  return Run(args);
}

// Cache figures, the default directory and size, and the process-wide cache registry.
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "chunk_store.h"
#include "sluice/base/bytes.h"
#include "sluice/io/cache/cache.h"
#include "time_bound_store.h"

namespace sluice::io::cache {

double CacheStats::hit_rate() const {
  return reads == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(reads);
}

double CacheStats::lru_hit_rate() const {
  return reads == 0 ? 0.0 : static_cast<double>(lru_hits) / static_cast<double>(reads);
}

CacheStats CacheStats::Since(const CacheStats& start) const {
  CacheStats d = *this;
  auto minus = [](uint64_t a, uint64_t b) { return a >= b ? a - b : 0; };
  for (auto field :
       {&CacheStats::reads, &CacheStats::hits, &CacheStats::joined, &CacheStats::misses,
        &CacheStats::lru_hits, &CacheStats::fetches, &CacheStats::fetched_bytes,
        &CacheStats::prefetches, &CacheStats::prefetched_bytes, &CacheStats::stored,
        &CacheStats::evictions, &CacheStats::evicted_bytes, &CacheStats::skipped,
        &CacheStats::damaged, &CacheStats::lock_timeouts, &CacheStats::read_errors,
        &CacheStats::disk_timeouts}) {
    d.*field = minus(this->*field, start.*field);
  }
  d.fetch_wait_seconds = std::max(0.0, fetch_wait_seconds - start.fetch_wait_seconds);
  return d;
}

std::string CacheStats::ToString() const {
  if (!bypassed.empty()) {
    return "cache " + dir + ": bypassed, " + std::to_string(reads) +
           " reads went to the remote store (" + bypassed + ")";
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "cache %s: hit rate %.1f%% (LRU would have had %.1f%%), fetched %s in %llu "
                "reads, evicted %s, waited %.2f s for fetches, %s of %s used",
                dir.c_str(), 100 * hit_rate(), 100 * lru_hit_rate(),
                FormatByteSize(fetched_bytes).c_str(), static_cast<unsigned long long>(fetches),
                FormatByteSize(evicted_bytes).c_str(), fetch_wait_seconds,
                FormatByteSize(used_bytes).c_str(), FormatByteSize(capacity_bytes).c_str());
  return buf;
}

CacheStats Cache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats s = stats_;
  s.capacity_bytes = capacity_;
  s.used_bytes = used_;
  if (!bypassed_.ok()) return s;
  s.lru_hits = ghost_->hits();
  s.disk_timeouts = bounded_->timeouts();
  return s;
}

uint64_t Cache::capacity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return capacity_;
}

std::string DefaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/sluice";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] != '\0' ? home : "/tmp") + "/.cache/sluice";
}

uint64_t DefaultCacheBytes(const std::string& dir) {
  constexpr uint64_t kMin = uint64_t{1} << 30;
  std::string probe = dir;
  struct statvfs st;
  while (::statvfs(probe.c_str(), &st) != 0) {
    size_t slash = probe.rfind('/');
    if (slash == std::string::npos || probe == "/") return kMin;
    probe = slash == 0 ? "/" : probe.substr(0, slash);
  }
  uint64_t free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  uint64_t cached = 0;
  if (auto chunks = ChunkStore(dir + "/chunks").Scan(false); chunks.ok()) {
    for (const StoredChunk& c : *chunks) cached += c.file_bytes;
  }
  return std::max(kMin, free_bytes / 2 + cached);
}

Result<std::shared_ptr<Cache>> SharedCache(const CacheOptions& options) {
  static std::mutex mu;
  static auto* caches = new std::map<std::string, std::shared_ptr<Cache>>();  // never destroyed
  std::string dir = options.dir.empty() ? DefaultCacheDir() : options.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::lock_guard<std::mutex> lock(mu);
  auto it = caches->find(dir);
  if (it != caches->end()) return it->second;
  CacheOptions o = options;
  o.dir = dir;
  Result<std::shared_ptr<Cache>> opened = Cache::Open(o);
  if (!opened.ok()) {
    // Best effort: a directory that cannot hold a cache never stops a read.
    std::fprintf(stderr, "sluice: warning: %s; reading without the cache\n",
                 opened.status().message().c_str());
  }
  std::shared_ptr<Cache> cache = opened.ok() ? *opened : Cache::Bypassing(o, opened.status());
  caches->emplace(dir, cache);
  return cache;
}

}  // namespace sluice::io::cache

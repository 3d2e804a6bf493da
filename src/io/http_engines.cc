// The process's HTTP engines: the registry of live engines (ProcessHttpStats sums them for
// the stall report), the default engine remote file systems share, and the statistics'
// arithmetic and description.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "io/http_transfer.h"
#include "sluice/io/http_engine.h"

namespace sluice::io {
namespace {

// Every live engine, for ProcessHttpStats().
std::mutex& RegistryMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::vector<const HttpEngine*>& Registry() {
  static auto* engines = new std::vector<const HttpEngine*>;
  return *engines;
}

}  // namespace

namespace internal {

void RegisterEngine(const HttpEngine* engine) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().push_back(engine);
}

void UnregisterEngine(const HttpEngine* engine) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto& r = Registry();
  r.erase(std::remove(r.begin(), r.end(), engine), r.end());
}

}  // namespace internal

namespace {
// A positive number of seconds (decimals allowed) from the environment.
void SecondsFromEnv(const char* name, std::chrono::milliseconds* out) {
  const char* text = std::getenv(name);
  if (text == nullptr) return;
  const double seconds = std::atof(text);
  if (seconds > 0) *out = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}
}  // namespace

HttpEngine* DefaultHttpEngine() {
  static std::mutex mu;
  static HttpEngine* engine = nullptr;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (engine == nullptr || owner != ::getpid()) {
    // In a forked child the parent's engine thread does not exist: that engine is left
    // behind (never destroyed) and a new one serves this process.
    HttpEngineOptions options;
    if (const char* cap = std::getenv("SLUICE_HTTP_MAX_IN_FLIGHT")) {
      const long n = std::atol(cap);
      if (n > 0) options.max_in_flight = static_cast<size_t>(n);
    }
    SecondsFromEnv("SLUICE_HTTP_STALL_TIMEOUT", &options.stall_timeout);
    SecondsFromEnv("SLUICE_HTTP_TIMEOUT", &options.request_timeout);
    SecondsFromEnv("SLUICE_HTTP_CONNECT_TIMEOUT", &options.connect_timeout);
    engine = new HttpEngine(options);
    owner = ::getpid();
  }
  return engine;
}

HttpEngineStats ProcessHttpStats() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  HttpEngineStats sum;
  for (const HttpEngine* e : Registry()) {
    HttpEngineStats s = e->stats();
    sum.in_flight += s.in_flight;
    sum.queued += s.queued;
    sum.requests += s.requests;
    sum.failed += s.failed;
    sum.attempts += s.attempts;
    sum.retries += s.retries;
    sum.hedges += s.hedges;
    sum.hedges_won += s.hedges_won;
    sum.bytes_received += s.bytes_received;
    sum.bytes_sent += s.bytes_sent;
    sum.first_byte_p50_ms = std::max(sum.first_byte_p50_ms, s.first_byte_p50_ms);
    sum.first_byte_p95_ms = std::max(sum.first_byte_p95_ms, s.first_byte_p95_ms);
  }
  return sum;
}

HttpEngineStats Since(const HttpEngineStats& now, const HttpEngineStats& before) {
  HttpEngineStats d = now;
  d.requests -= before.requests;
  d.failed -= before.failed;
  d.attempts -= before.attempts;
  d.retries -= before.retries;
  d.hedges -= before.hedges;
  d.hedges_won -= before.hedges_won;
  d.bytes_received -= before.bytes_received;
  d.bytes_sent -= before.bytes_sent;
  return d;
}

std::string DescribeHttpStats(const HttpEngineStats& d, double seconds) {
  if (d.requests == 0 && d.in_flight == 0 && d.queued == 0) return "";
  char buf[320];
  std::snprintf(
      buf, sizeof(buf),
      "network: %llu requests in flight (%llu queued), %llu requests, %.1f MB/s in, "
      "%llu retries, %llu hedges (%llu won), first byte p50 %.1f ms p95 %.1f ms",
      static_cast<unsigned long long>(d.in_flight), static_cast<unsigned long long>(d.queued),
      static_cast<unsigned long long>(d.requests),
      seconds > 0 ? static_cast<double>(d.bytes_received) / seconds / 1e6 : 0.0,
      static_cast<unsigned long long>(d.retries), static_cast<unsigned long long>(d.hedges),
      static_cast<unsigned long long>(d.hedges_won), d.first_byte_p50_ms, d.first_byte_p95_ms);
  return buf;
}

}  // namespace sluice::io

// Shared by the cache's tests: a cache directory in /tmp, a "remote" of files in memory behind
// a SimulatedRemoteFileSystem that counts reads, and helpers to read through a cache.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "io/cache/ledger.h"
#include "sluice/io/cache/cache.h"
#include "sluice/io/cache/cached_file_system.h"
#include "sluice/io/cache/simulated_remote.h"

namespace sluice::io::cache {

inline std::string TestBytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

class CacheFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice_cache_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    memory_ = NewMemoryFileSystem();
    UseRemote({});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Replaces the simulated remote (latency, failures) in front of the same files.
  void UseRemote(SimulatedRemoteOptions options) {
    remote_ = std::make_unique<SimulatedRemoteFileSystem>(memory_.get(), std::move(options));
  }
  std::string AddFile(const std::string& name, size_t bytes, uint64_t seed) {
    std::string data = TestBytes(bytes, seed);
    EXPECT_TRUE(memory_->WriteAll("/remote/" + name, data).ok());
    return data;
  }
  CacheOptions Options(uint64_t capacity, uint64_t block = 64 << 10) const {
    CacheOptions o;
    o.dir = dir_;
    o.capacity_bytes = capacity;
    o.block_bytes = block;
    o.io_threads = 4;
    return o;
  }
  std::shared_ptr<Cache> Open(const CacheOptions& options) {
    auto cache = Cache::Open(options);
    EXPECT_TRUE(cache.ok()) << cache.status().ToString();
    return cache.ok() ? *cache : nullptr;
  }
  // Blocking read of [offset, offset + n) of /remote/name through `fs`.
  static Result<std::string> ReadRange(CachedFileSystem& fs, const std::string& name,
                                       uint64_t offset, size_t n) {
    SLUICE_ASSIGN_OR_RETURN(auto file, fs.OpenForRead("/remote/" + name));
    std::string scratch(n, '\0');
    SLUICE_ASSIGN_OR_RETURN(ByteView got, file->Read(offset, n, scratch.data()));
    return std::string(got);
  }
  // Bytes of published chunk files in the cache directory (temporaries not counted), summed
  // under the ledger's lock (as another process would take it): publishing and eviction happen
  // under it, so this is the total at one instant.
  uint64_t PublishedBytes() const {
    auto ledger = Ledger::Open(dir_ + "/ledger");
    if (!ledger.ok()) return 0;
    auto lock = (*ledger)->Lock();
    uint64_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir_ + "/chunks", ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      std::string name = it->path().filename();
      if (!it->is_regular_file(ec) || name.find(".tmp-") != std::string::npos) continue;
      total += it->file_size(ec);
    }
    return total;
  }
  // Waits (bounded) until `done()` holds; false if it never did.
  template <typename F>
  static bool Eventually(F done) {
    for (int i = 0; i < 2000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return done();
  }
  // Readers get a chunk before it is stored: waits (bounded) until every fetch of `cache` was
  // stored or skipped.
  static bool Settled(const Cache& cache) {
    return Eventually([&] {
      CacheStats s = cache.stats();
      return s.stored + s.skipped == s.fetches;
    });
  }

  std::string dir_;
  std::unique_ptr<FileSystem> memory_;
  std::unique_ptr<SimulatedRemoteFileSystem> remote_;
};

}  // namespace sluice::io::cache

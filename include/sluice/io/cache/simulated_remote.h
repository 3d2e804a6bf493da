// A local or in-memory file system made to behave like a remote store, for the cache's
// tests, tools and benchmarks: every read waits a first-byte latency (with seeded jitter)
// and streams at a bandwidth, and every read is counted (and optionally logged to a file that
// several processes append to, so a test can count fetches per chunk across a node).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "sluice/io/file_system.h"

namespace sluice::io::cache {

struct SimulatedRemoteOptions {
  // The file system's name ("s3" makes it count as remote). Default: "" = the base's name.
  std::string name;
  double latency_seconds = 0;   // first byte. Default: 0
  double jitter_seconds = 0;    // plus uniform [0, jitter) from `seed`. Default: 0
  double bytes_per_second = 0;  // per read; 0 = unlimited. Default: 0
  uint64_t seed = 0;
  // The first this many reads fail with IoError (after their latency). Default: 0.
  uint64_t fail_first_reads = 0;
  // Appends "<path> <offset> <bytes>\n" per read (O_APPEND: lines from many processes do not
  // interleave). Default: "" = none.
  std::string log_path;
};

class SimulatedRemoteFileSystem final : public FileSystem {
 public:
  // `base` must outlive this object.
  SimulatedRemoteFileSystem(FileSystem* base, SimulatedRemoteOptions options);
  ~SimulatedRemoteFileSystem() override;
  std::string_view name() const override {
    return options_.name.empty() ? base_->name() : std::string_view(options_.name);
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options) override {
    return base_->OpenForWrite(path, options);
  }
  Result<FileInfo> Stat(const std::string& path) override { return base_->Stat(path); }
  Result<std::vector<FileInfo>> List(const std::string& dir) override { return base_->List(dir); }
  Status Delete(const std::string& path) override { return base_->Delete(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }

  // Reads: ranges read (each counted once, whether alone or in a ReadRangesAsync call).
  uint64_t reads() const { return reads_.load(); }
  // ReadRangesAsync calls (a remote that merges ranges, like S3, makes each one request).
  uint64_t range_calls() const { return range_calls_.load(); }
  void CountRangeCall() { range_calls_.fetch_add(1); }
  uint64_t bytes_read() const { return bytes_.load(); }

  // Called by its files: waits as a remote read of `bytes` would; false when it must fail.
  bool Wait(uint64_t bytes);
  void Count(const std::string& path, uint64_t offset, uint64_t bytes);

 private:
  FileSystem* base_;
  const SimulatedRemoteOptions options_;
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> range_calls_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> draws_{0};
  std::atomic<uint64_t> failures_{0};
  int log_fd_ = -1;
};

}  // namespace sluice::io::cache

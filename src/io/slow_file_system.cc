// SlowFileSystem: every call sleeps a seeded random latency, then forwards.
#include "sluice/io/slow_file_system.h"

#include <mutex>
#include <random>
#include <thread>

namespace sluice::io {

namespace {

class Latency {
 public:
  explicit Latency(const SlowOptions& o) : options_(o), rng_(o.seed) {}
  void Wait() const {
    std::chrono::microseconds d;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::uniform_int_distribution<int64_t> dist(
          options_.min_latency.count(),
          std::max(options_.min_latency.count(), options_.max_latency.count()));
      d = std::chrono::microseconds(dist(rng_));
    }
    std::this_thread::sleep_for(d);
  }

 private:
  SlowOptions options_;
  mutable std::mutex mu_;
  mutable std::mt19937_64 rng_;  // guarded by mu_
};

class SlowReadFile final : public RandomAccessFile {
 public:
  SlowReadFile(std::unique_ptr<RandomAccessFile> base, std::shared_ptr<const Latency> latency)
      : base_(std::move(base)), latency_(std::move(latency)) {}
  const std::string& path() const override { return base_->path(); }
  uint64_t size() const override { return base_->size(); }
  Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
    latency_->Wait();
    return base_->Read(offset, n, scratch);
  }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  std::shared_ptr<const Latency> latency_;
};

class SlowWriteFile final : public WritableFile {
 public:
  SlowWriteFile(std::unique_ptr<WritableFile> base, std::shared_ptr<const Latency> latency)
      : base_(std::move(base)), latency_(std::move(latency)) {}
  const std::string& path() const override { return base_->path(); }
  Status Append(ByteView data) override {
    latency_->Wait();
    return base_->Append(data);
  }
  Status Close() override {
    latency_->Wait();
    return base_->Close();
  }
  void Abort() override { base_->Abort(); }
  uint64_t bytes_written() const override { return base_->bytes_written(); }

 private:
  std::unique_ptr<WritableFile> base_;
  std::shared_ptr<const Latency> latency_;
};

class SlowFileSystem final : public FileSystem {
 public:
  SlowFileSystem(FileSystem* base, const SlowOptions& options)
      : base_(base), latency_(std::make_shared<const Latency>(options)) {}
  std::string_view name() const override { return base_->name(); }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override {
    latency_->Wait();
    SLUICE_ASSIGN_OR_RETURN(auto file, base_->OpenForRead(path));
    return std::unique_ptr<RandomAccessFile>(new SlowReadFile(std::move(file), latency_));
  }
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options) override {
    latency_->Wait();
    SLUICE_ASSIGN_OR_RETURN(auto file, base_->OpenForWrite(path, options));
    return std::unique_ptr<WritableFile>(new SlowWriteFile(std::move(file), latency_));
  }
  Result<FileInfo> Stat(const std::string& path) override {
    latency_->Wait();
    return base_->Stat(path);
  }
  Result<std::vector<FileInfo>> List(const std::string& dir) override {
    latency_->Wait();
    return base_->List(dir);
  }
  Status Delete(const std::string& path) override {
    latency_->Wait();
    return base_->Delete(path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    latency_->Wait();
    return base_->Rename(from, to);
  }
  Status CreateDirs(const std::string& dir) override {
    latency_->Wait();
    return base_->CreateDirs(dir);
  }
  Status PutIfAbsent(const std::string& path, ByteView data) override {
    latency_->Wait();
    return base_->PutIfAbsent(path, data);
  }

 private:
  FileSystem* base_;
  std::shared_ptr<const Latency> latency_;
};

}  // namespace

std::unique_ptr<FileSystem> NewSlowFileSystem(FileSystem* base, SlowOptions options) {
  return std::make_unique<SlowFileSystem>(base, options);
}

}  // namespace sluice::io

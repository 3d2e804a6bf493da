#include "sluice/io/cache/simulated_remote.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "sluice/base/random.h"

namespace sluice::io::cache {
namespace {

class SimulatedRemoteFile final : public RandomAccessFile {
 public:
  SimulatedRemoteFile(std::unique_ptr<RandomAccessFile> base, SimulatedRemoteFileSystem* fs)
      : base_(std::move(base)), fs_(fs) {}
  const std::string& path() const override { return base_->path(); }
  uint64_t size() const override { return base_->size(); }
  Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
    Result<ByteView> got = base_->Read(offset, n, scratch);
    if (!got.ok()) return got;
    if (!fs_->Wait(got->size())) return IoError("read " + path() + ": injected failure");
    fs_->Count(path(), offset, got->size());
    return got;
  }
  void ReadRangesAsync(std::vector<ByteRange> ranges, RangesCallback done,
                       const IoContext& context) const override {
    fs_->CountRangeCall();
    RandomAccessFile::ReadRangesAsync(std::move(ranges), std::move(done), context);
  }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  SimulatedRemoteFileSystem* fs_;
};

}  // namespace

SimulatedRemoteFileSystem::SimulatedRemoteFileSystem(FileSystem* base,
                                                     SimulatedRemoteOptions options)
    : base_(base), options_(std::move(options)) {
  if (!options_.log_path.empty()) {
    log_fd_ = ::open(options_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
}

SimulatedRemoteFileSystem::~SimulatedRemoteFileSystem() {
  if (log_fd_ >= 0) ::close(log_fd_);
}

Result<std::unique_ptr<RandomAccessFile>> SimulatedRemoteFileSystem::OpenForRead(
    const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> base, base_->OpenForRead(path));
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<SimulatedRemoteFile>(std::move(base), this));
}

bool SimulatedRemoteFileSystem::Wait(uint64_t bytes) {
  double seconds = options_.latency_seconds;
  if (options_.jitter_seconds > 0) {
    uint64_t r = Mix64(options_.seed + 0x9e3779b97f4a7c15ull * draws_.fetch_add(1));
    seconds += options_.jitter_seconds * static_cast<double>(r >> 11) * 0x1.0p-53;
  }
  if (options_.bytes_per_second > 0)
    seconds += static_cast<double>(bytes) / options_.bytes_per_second;
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return failures_.fetch_add(1) >= options_.fail_first_reads;
}

void SimulatedRemoteFileSystem::Count(const std::string& path, uint64_t offset, uint64_t bytes) {
  reads_.fetch_add(1);
  bytes_.fetch_add(bytes);
  if (log_fd_ < 0) return;
  std::string line = path + " " + std::to_string(offset) + " " + std::to_string(bytes) + "\n";
  (void)!::write(log_fd_, line.data(), line.size());
}

}  // namespace sluice::io::cache

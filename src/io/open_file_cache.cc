// OpenFileCache (open_file_cache.h): the CLOCK of open descriptors, reopen and its checks.
#include "io/open_file_cache.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace sluice::io {

CachedFile::CachedFile(std::shared_ptr<OpenFileCache> cache, std::string path, int fd, dev_t dev,
                       ino_t ino, uint64_t size)
    : cache_(std::move(cache)), path_(std::move(path)), dev_(dev), ino_(ino), size_(size) {
  cache_->Add(this, fd);
}

CachedFile::~CachedFile() { cache_->Remove(this); }

Result<int> CachedFile::Pin() const {
  uint64_t state = state_.load(std::memory_order_acquire);
  while ((state & kOpen) != 0) {
    if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire)) {
      if (!referenced_.load(std::memory_order_relaxed)) {
        referenced_.store(true, std::memory_order_relaxed);
      }
      return fd_.load(std::memory_order_relaxed);
    }
  }
  return cache_->Reopen(this);
}

size_t OpenFileCache::DefaultCapacity() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return size_t{1} << 16;
  }
  return std::max<size_t>(64, static_cast<size_t>(limit.rlim_cur) / 2);
}

size_t OpenFileCache::open_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_.size();
}

Result<int> OpenFileCache::OpenForRead(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) return fd;
  if (errno != EMFILE && errno != ENFILE) return ErrnoStatus("open", path, errno);
  std::lock_guard<std::mutex> lock(mu_);
  return OpenLocked(path, "open");
}

Result<int> OpenFileCache::OpenLocked(const std::string& path, std::string_view operation) {
  // The process is out of descriptors (other files, sockets, a lower limit than at start):
  // give back an eighth of ours at a time, a few times, before failing.
  for (int tries = 0;; ++tries) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) return fd;
    const int err = errno;
    if ((err != EMFILE && err != ENFILE) || tries == 8) return ErrnoStatus(operation, path, err);
    bool evicted = false;
    for (size_t n = std::max<size_t>(1, open_.size() / 8); n > 0 && EvictOneLocked(); --n) {
      evicted = true;
    }
    if (!evicted) return ErrnoStatus(operation, path, err);
  }
}

void OpenFileCache::Add(const CachedFile* file, int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  MakeRoomLocked();
  PushLocked(file, fd, 0);
}

Result<int> OpenFileCache::Reopen(const CachedFile* file) {
  std::lock_guard<std::mutex> lock(mu_);
  // Another thread may have reopened it while this one waited for the lock.
  uint64_t state = file->state_.load(std::memory_order_acquire);
  while ((state & CachedFile::kOpen) != 0) {
    if (file->state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire)) {
      return file->fd_.load(std::memory_order_relaxed);
    }
  }
  MakeRoomLocked();
  Result<int> fd = OpenLocked(file->path_, "reopen");
  if (!fd.ok()) {
    if (fd.status().code() != StatusCode::kNotFound) return fd.status();
    return NotFound(file->path_ +
                    ": deleted since it was opened (reopening it after its descriptor was "
                    "closed to bound the files open at once)");
  }
  struct stat st;
  if (::fstat(*fd, &st) != 0) {
    const int err = errno;
    ::close(*fd);
    return ErrnoStatus("stat", file->path_, err);
  }
  if (st.st_dev != file->dev_ || st.st_ino != file->ino_ ||
      static_cast<uint64_t>(st.st_size) != file->size_) {
    ::close(*fd);
    return FailedPrecondition(file->path_ + ": replaced or changed since it was opened (it was " +
                              std::to_string(file->size_) + " bytes, inode " +
                              std::to_string(file->ino_) + "; now " + std::to_string(st.st_size) +
                              " bytes, inode " + std::to_string(st.st_ino) +
                              "): open the dataset again to read the new file");
  }
  PushLocked(file, *fd, 1);
  return *fd;
}

void OpenFileCache::Remove(const CachedFile* file) {
  std::lock_guard<std::mutex> lock(mu_);
  if (file->slot_ == SIZE_MAX) return;  // closed by the cache
  file->state_.store(0, std::memory_order_relaxed);
  ::close(file->fd_.exchange(-1, std::memory_order_relaxed));
  RemoveSlotLocked(file);
}

bool OpenFileCache::EvictOneLocked() {
  for (size_t step = 0, n = open_.size(); step < 2 * n; ++step) {
    if (hand_ >= open_.size()) hand_ = 0;
    const CachedFile* file = open_[hand_];
    uint64_t idle = CachedFile::kOpen;
    if (file->referenced_.exchange(false, std::memory_order_relaxed) ||
        !file->state_.compare_exchange_strong(idle, 0, std::memory_order_acq_rel)) {
      ++hand_;  // used recently (a second chance), or being read now
      continue;
    }
    ::close(file->fd_.exchange(-1, std::memory_order_relaxed));
    RemoveSlotLocked(file);  // the hand now points at the file moved into this slot
    return true;
  }
  return false;
}

void OpenFileCache::PushLocked(const CachedFile* file, int fd, uint64_t pins) {
  file->fd_.store(fd, std::memory_order_relaxed);
  file->slot_ = open_.size();
  open_.push_back(file);
  file->referenced_.store(true, std::memory_order_relaxed);
  file->state_.store(CachedFile::kOpen | pins, std::memory_order_release);
}

void OpenFileCache::RemoveSlotLocked(const CachedFile* file) {
  const CachedFile* last = open_.back();
  open_[file->slot_] = last;
  last->slot_ = file->slot_;
  open_.pop_back();
  file->slot_ = SIZE_MAX;
}

}  // namespace sluice::io

#include "chunk_locks.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace sluice::io::cache {
namespace {

int SetLock(int fd, short type, uint64_t offset) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(offset);
  fl.l_len = 1;
  fl.l_pid = 0;  // required by F_OFD_*
  int r;
  do {
    r = ::fcntl(fd, F_OFD_SETLK, &fl);
  } while (r != 0 && errno == EINTR);
  return r == 0 ? 0 : errno;
}

}  // namespace

Result<std::unique_ptr<ChunkLocks>> ChunkLocks::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  return std::unique_ptr<ChunkLocks>(new ChunkLocks(path, fd));
}

ChunkLocks::~ChunkLocks() { ::close(fd_); }

Result<bool> ChunkLocks::TryLock(const ChunkId& id) {
  const uint64_t offset = OffsetOf(id);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(offset);
  if (it != held_.end()) {
    ++it->second;
    return true;
  }
  int err = SetLock(fd_, F_WRLCK, offset);
  if (err == EAGAIN || err == EACCES) return false;
  if (err != 0) return ErrnoStatus("lock byte " + std::to_string(offset) + " of", path_, err);
  held_[offset] = 1;
  return true;
}

void ChunkLocks::Unlock(const ChunkId& id) {
  const uint64_t offset = OffsetOf(id);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(offset);
  if (it == held_.end()) return;
  if (--it->second > 0) return;
  held_.erase(it);
  SetLock(fd_, F_UNLCK, offset);
}

}  // namespace sluice::io::cache

// OpenFileCache: a bound on the descriptors that the local file system's open files hold.
// Private to src/io (local_file_system.cc).
//
// A dataset of thousands of shards opens two files per shard (the shard and its index) and
// keeps them for its whole life; under the common `ulimit -n 1024` that fails with "Too many
// open files" long before memory runs short. So an open file keeps its path and identity,
// and its descriptor only while the cache lets it: past `capacity` open descriptors, the
// least recently used one whose file is not being read is closed (CLOCK, the approximation
// of LRU that needs no lock on use), and the file reopens by path on its next read. A file
// replaced or changed since it was opened (another device/inode, another size) does not
// reopen: its read fails naming the file, instead of returning another file's bytes.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::io {

class OpenFileCache;

// One file of the cache: its identity, and its descriptor while it is open.
// Threading: Pin/Unpin from any number of threads; a file must outlive its pins.
class CachedFile {
 public:
  // Registers `fd`, open on `path` with identity (dev, ino, size), with `cache`, which may
  // close other files' descriptors to make room.
  CachedFile(std::shared_ptr<OpenFileCache> cache, std::string path, int fd, dev_t dev, ino_t ino,
             uint64_t size);
  ~CachedFile();
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

  // The descriptor, kept open until Unpin(): reopened by path if the cache had closed it.
  // Fast path (the file is open): two atomic operations, no lock.
  Result<int> Pin() const;
  void Unpin() const { state_.fetch_sub(1, std::memory_order_release); }

 private:
  friend class OpenFileCache;
  static constexpr uint64_t kOpen = uint64_t{1} << 63;  // the rest of state_ counts the pins

  const std::shared_ptr<OpenFileCache> cache_;
  const std::string path_;
  const dev_t dev_;
  const ino_t ino_;
  const uint64_t size_;
  // kOpen | pins. A pin is taken only while kOpen is set, and the cache clears kOpen only
  // when there is no pin (one compare-and-swap), so a pinned descriptor is never closed.
  mutable std::atomic<uint64_t> state_{0};
  mutable std::atomic<int> fd_{-1};              // valid while kOpen is set
  mutable std::atomic<bool> referenced_{false};  // used since the clock hand last passed
  mutable size_t slot_ = SIZE_MAX;               // index in the cache's open files; its mutex
};

// Threading: all methods are safe to call concurrently.
class OpenFileCache {
 public:
  // At most `capacity` descriptors open (at least 1), unless more files than that are being
  // read at the same moment: a pinned file is never closed, the bound is then exceeded.
  explicit OpenFileCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Half the soft RLIMIT_NOFILE (at least 64): the rest stays for sockets, pipes and the
  // files of other libraries in the process.
  static size_t DefaultCapacity();

  // Descriptors open now.
  size_t open_files() const;
  size_t capacity() const { return capacity_; }

  // open(2) for reading; on EMFILE/ENFILE closes cached descriptors and tries again.
  Result<int> OpenForRead(const std::string& path);

 private:
  friend class CachedFile;
  void Add(const CachedFile* file, int fd);    // a newly opened file, unpinned
  Result<int> Reopen(const CachedFile* file);  // for CachedFile::Pin: reopened and pinned
  void Remove(const CachedFile* file);         // at the file's destruction
  // open(2) for reading, evicting on EMFILE/ENFILE. Called with mu_ held.
  Result<int> OpenLocked(const std::string& path, std::string_view operation);
  // Closes one unpinned descriptor not used since the clock hand last passed it; false when
  // every open file is pinned. Called with mu_ held.
  bool EvictOneLocked();
  void MakeRoomLocked() {
    while (open_.size() >= capacity_ && EvictOneLocked()) {
    }
  }
  void PushLocked(const CachedFile* file, int fd, uint64_t pins);
  void RemoveSlotLocked(const CachedFile* file);

  const size_t capacity_;
  mutable std::mutex mu_;                // guards open_, hand_, CachedFile::slot_
  std::vector<const CachedFile*> open_;  // the files whose descriptor is open
  size_t hand_ = 0;                      // the clock hand: next index in open_ to look at
};

}  // namespace sluice::io

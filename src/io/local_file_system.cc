// Local disk: pread for positional reads through descriptors the OpenFileCache bounds;
// write(2) into "<name>.tmp-<pid>-<n>", fdatasync(2), rename(2) and fsync(2) of the directory
// on Close for a durable atomic finalize (file_system.h, "Durability").
#include <dirent.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "io/open_file_cache.h"
#include "sluice/io/file_system.h"

namespace sluice::io {
namespace {

// Whether SLUICE_SYNC turns syncing off ("0", "false", "off", "no"). Read at each durable
// call, so a Python program may set it in os.environ at any time before it writes.
bool SyncDisabledByEnvironment() {
  const char* value = std::getenv("SLUICE_SYNC");
  if (value == nullptr) return false;
  for (const char* off : {"0", "false", "off", "no"}) {
    if (::strcasecmp(value, off) == 0) return true;
  }
  return false;
}

// Makes the entries of `dir` (a rename, link or mkdir done in it) durable. A file system
// that cannot sync directories (EINVAL: some FUSE and network file systems) has nothing
// more to offer, which is not an error.
Status SyncDirectory(std::string_view dir) {
  const std::string path = dir.empty() ? "." : std::string(dir);
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open directory to sync", path, errno);
  Status status;
  if (::fsync(fd) != 0 && errno != EINVAL) status = ErrnoStatus("sync directory", path, errno);
  ::close(fd);
  return status;
}

// A read-only shared mapping of a whole file; the descriptor is not needed once mapped.
class LocalFileMapping final : public FileMapping {
 public:
  LocalFileMapping(void* addr, size_t size) : addr_(addr), size_(size) {}
  ~LocalFileMapping() override { ::munmap(addr_, size_); }
  ByteView data() const override { return ByteView(static_cast<const char*>(addr_), size_); }
  bool is_mapped() const override { return true; }

 private:
  void* addr_;
  size_t size_;
};

// Reads through a CachedFile: its descriptor may be closed between reads and reopened.
class LocalRandomAccessFile final : public RandomAccessFile {
 public:
  explicit LocalRandomAccessFile(std::unique_ptr<CachedFile> file) : file_(std::move(file)) {}

  const std::string& path() const override { return file_->path(); }
  uint64_t size() const override { return file_->size(); }

  Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
    SLUICE_ASSIGN_OR_RETURN(int fd, file_->Pin());
    size_t done = 0;
    Status status;
    while (done < n) {
      ssize_t r = ::pread(fd, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        status = ErrnoStatus("read", path(), errno);
        break;
      }
      if (r == 0) break;  // end of file
      done += static_cast<size_t>(r);
    }
    file_->Unpin();
    if (!status.ok()) return status;
    return ByteView(scratch, done);
  }

  bool MapsInPlace() const override { return size() > 0; }

  // The mapping needs no descriptor once made.
  Result<std::unique_ptr<FileMapping>> Map() const override {
    if (size() == 0) return RandomAccessFile::Map();  // mmap rejects empty ranges
    SLUICE_ASSIGN_OR_RETURN(int fd, file_->Pin());
    void* addr = ::mmap(nullptr, size(), PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    file_->Unpin();
    if (addr == MAP_FAILED) return ErrnoStatus("mmap", path(), err);
    return std::unique_ptr<FileMapping>(new LocalFileMapping(addr, size()));
  }

 private:
  std::unique_ptr<CachedFile> file_;
};

class LocalWritableFile final : public WritableFile {
 public:
  // `sync`: make Close() durable (fdatasync of the data, fsync of the directory).
  LocalWritableFile(std::string path, std::string tmp, int fd, bool sync)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd), sync_(sync) {}
  ~LocalWritableFile() override { Abort(); }

  const std::string& path() const override { return path_; }
  uint64_t bytes_written() const override { return written_; }

  Status Append(ByteView data) override {
    if (!status_.ok()) return status_;
    if (fd_ < 0) return status_ = FailedPrecondition("append to closed file " + path_);
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t r = ::write(fd_, p, left);
      if (r < 0) {
        if (errno == EINTR) continue;
        return status_ = ErrnoStatus("write", tmp_, errno);
      }
      p += r;
      left -= static_cast<size_t>(r);
    }
    written_ += data.size();
    return Status::OK();
  }

  Status Close() override {
    if (closed_) return status_;
    std::string tmp;
    if (!CloseKeepingTemp(&tmp).ok()) return status_;
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      status_ = ErrnoStatus("rename " + tmp_ + " to", path_, errno);
      ::unlink(tmp_.c_str());
      return status_;
    }
    if (sync_) status_ = SyncDirectory(Dirname(path_));
    return status_;
  }

  // Flushes (and syncs) and closes like Close() but leaves the bytes under the temporary
  // name, which the caller takes over (PutIfAbsent links it into place).
  Status CloseKeepingTemp(std::string* tmp) {
    if (closed_) return status_.ok() ? FailedPrecondition("file already closed") : status_;
    closed_ = true;
    if (status_.ok() && sync_ && ::fdatasync(fd_) != 0) {
      status_ = ErrnoStatus("sync", tmp_, errno);
    }
    if (::close(fd_) != 0 && status_.ok()) status_ = ErrnoStatus("close", tmp_, errno);
    fd_ = -1;
    if (!status_.ok()) {
      ::unlink(tmp_.c_str());
      return status_;
    }
    *tmp = tmp_;
    return Status::OK();
  }

  void Abort() override {
    if (closed_) return;
    closed_ = true;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
    if (status_.ok()) status_ = Cancelled("write of " + path_ + " aborted");
  }

 private:
  std::string path_, tmp_;
  int fd_;
  const bool sync_;
  uint64_t written_ = 0;
  bool closed_ = false;
  Status status_;  // sticky: the first error wins
};

class LocalDiskFileSystem final : public FileSystem {
 public:
  explicit LocalDiskFileSystem(const LocalFileSystemOptions& options)
      : sync_(options.sync),
        open_files_(std::make_shared<OpenFileCache>(options.max_open_files != 0
                                                        ? options.max_open_files
                                                        : OpenFileCache::DefaultCapacity())) {}

  std::string_view name() const override { return "local"; }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override {
    SLUICE_ASSIGN_OR_RETURN(int fd, open_files_->OpenForRead(path));
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return ErrnoStatus("stat", path, err);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return InvalidArgument(path + " is a directory, not a file");
    }
    return std::unique_ptr<RandomAccessFile>(new LocalRandomAccessFile(std::make_unique<CachedFile>(
        open_files_, path, fd, st.st_dev, st.st_ino, static_cast<uint64_t>(st.st_size))));
  }

  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options) override {
    static std::atomic<uint64_t> counter{0};
    std::string tmp =
        path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("create", tmp, errno);
    return std::unique_ptr<WritableFile>(
        new LocalWritableFile(path, tmp, fd, options.durable && syncs()));
  }

  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    int64_t mtime_ms =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    return FileInfo{path, static_cast<uint64_t>(st.st_size), S_ISDIR(st.st_mode), mtime_ms};
  }

  Result<std::vector<FileInfo>> List(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ErrnoStatus("list", dir, errno);
    std::vector<FileInfo> out;
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      auto info = Stat(JoinPath(dir, n));
      if (info.ok()) out.push_back(std::move(*info));  // vanished meanwhile: skip
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(),
              [](const FileInfo& a, const FileInfo& b) { return a.path < b.path; });
    return out;
  }

  Status Delete(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoStatus("delete", path, errno);
    return Status::OK();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return ErrnoStatus("rename " + from + " to", to, errno);
    if (!syncs()) return Status::OK();
    SLUICE_RETURN_IF_ERROR(SyncDirectory(Dirname(to)));
    return Dirname(from) == Dirname(to) ? Status::OK() : SyncDirectory(Dirname(from));
  }

  // A complete (synced) temporary file, then link(2) to the final name: link fails with
  // EEXIST instead of replacing, atomically, also on NFS v3+ (unlike O_EXCL on old clients).
  // The directory is synced after the temporary is gone, so a power cut leaves none behind.
  Status PutIfAbsent(const std::string& path, ByteView data) override {
    SLUICE_ASSIGN_OR_RETURN(auto file, OpenForWrite(path + ".put", WriteOptions{}));
    auto* local = static_cast<LocalWritableFile*>(file.get());
    SLUICE_RETURN_IF_ERROR(local->Append(data));
    std::string tmp;
    SLUICE_RETURN_IF_ERROR(local->CloseKeepingTemp(&tmp));
    Status status;
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      status = errno == EEXIST ? AlreadyExists(path + " already exists")
                               : ErrnoStatus("link " + tmp + " to", path, errno);
    }
    ::unlink(tmp.c_str());
    if (status.ok() && syncs()) status = SyncDirectory(Dirname(path));
    return status;
  }

  Result<std::string> RealPath(const std::string& path) override {
    char* resolved = ::realpath(path.c_str(), nullptr);
    if (resolved == nullptr) return ErrnoStatus("resolve", path, errno);
    std::string out(resolved);
    std::free(resolved);
    return out;
  }

  Status CreateDirs(const std::string& dir) override {
    if (dir.empty()) return Status::OK();
    std::string partial;
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = dir.find('/', pos + 1);
      partial = dir.substr(0, pos);
      if (partial.empty()) continue;
      if (::mkdir(partial.c_str(), 0755) == 0) {
        // The new directory's entry is durable once its parent is synced; the files put
        // into it later sync the directory itself.
        if (syncs()) SLUICE_RETURN_IF_ERROR(SyncDirectory(Dirname(partial)));
      } else if (errno != EEXIST) {
        return ErrnoStatus("mkdir", partial, errno);
      }
    }
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return IoError("mkdir " + dir + ": exists and is not a directory");
    }
    return Status::OK();
  }

 private:
  // Whether durable calls sync: the option, unless SLUICE_SYNC turns it off.
  bool syncs() const { return sync_ && !SyncDisabledByEnvironment(); }

  const bool sync_;
  const std::shared_ptr<OpenFileCache> open_files_;  // files outlive this: they share it
};

}  // namespace

FileSystem* LocalFileSystem() {
  // Never destroyed: used at exit.
  static LocalDiskFileSystem* fs = new LocalDiskFileSystem(LocalFileSystemOptions{});
  return fs;
}

std::unique_ptr<FileSystem> NewLocalFileSystem(const LocalFileSystemOptions& options) {
  return std::make_unique<LocalDiskFileSystem>(options);
}

}  // namespace sluice::io

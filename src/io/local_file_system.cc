// Local disk: pread for positional reads, write(2) into "<name>.tmp-<pid>-<n>" and
// rename(2) on Close for atomic finalize.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>

#include "sluice/io/file_system.h"

namespace sluice::io {
namespace {

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

class LocalRandomAccessFile final : public RandomAccessFile {
 public:
  LocalRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~LocalRandomAccessFile() override { ::close(fd_); }

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

  Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read", path_, errno);
      }
      if (r == 0) break;  // end of file
      done += static_cast<size_t>(r);
    }
    return ByteView(scratch, done);
  }

  bool MapsInPlace() const override { return size_ > 0; }

  Result<std::unique_ptr<FileMapping>> Map() const override {
    if (size_ == 0) return RandomAccessFile::Map();  // mmap rejects empty ranges
    void* addr = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    if (addr == MAP_FAILED) return ErrnoStatus("mmap", path_, errno);
    return std::unique_ptr<FileMapping>(new LocalFileMapping(addr, size_));
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class LocalWritableFile final : public WritableFile {
 public:
  LocalWritableFile(std::string path, std::string tmp, int fd, WriteOptions options)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd), options_(options) {}
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
    closed_ = true;
    if (status_.ok() && options_.sync_on_close && ::fsync(fd_) != 0) {
      status_ = ErrnoStatus("fsync", tmp_, errno);
    }
    if (::close(fd_) != 0 && status_.ok()) status_ = ErrnoStatus("close", tmp_, errno);
    fd_ = -1;
    if (status_.ok() && ::rename(tmp_.c_str(), path_.c_str()) != 0) {
      status_ = ErrnoStatus("rename " + tmp_ + " to", path_, errno);
    }
    if (!status_.ok()) ::unlink(tmp_.c_str());
    return status_;
  }

  // Flushes and closes like Close() but leaves the bytes under the temporary name, which
  // the caller takes over (PutIfAbsent links it into place).
  Status CloseKeepingTemp(std::string* tmp) {
    if (closed_) return status_.ok() ? FailedPrecondition("file already closed") : status_;
    closed_ = true;
    if (status_.ok() && options_.sync_on_close && ::fsync(fd_) != 0) {
      status_ = ErrnoStatus("fsync", tmp_, errno);
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
  WriteOptions options_;
  uint64_t written_ = 0;
  bool closed_ = false;
  Status status_;  // sticky: the first error wins
};

class LocalDiskFileSystem final : public FileSystem {
 public:
  std::string_view name() const override { return "local"; }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open", path, errno);
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
    return std::unique_ptr<RandomAccessFile>(
        new LocalRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options) override {
    static std::atomic<uint64_t> counter{0};
    std::string tmp =
        path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("create", tmp, errno);
    return std::unique_ptr<WritableFile>(new LocalWritableFile(path, tmp, fd, options));
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
    return Status::OK();
  }

  // A complete temporary file, then link(2) to the final name: link fails with EEXIST
  // instead of replacing, atomically, also on NFS v3+ (unlike O_EXCL on old clients).
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
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus("mkdir", partial, errno);
      }
    }
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return IoError("mkdir " + dir + ": exists and is not a directory");
    }
    return Status::OK();
  }
};

}  // namespace

FileSystem* LocalFileSystem() {
  static LocalDiskFileSystem* fs = new LocalDiskFileSystem();  // never destroyed: used at exit
  return fs;
}

}  // namespace sluice::io

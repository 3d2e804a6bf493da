// An in-memory FileSystem for tests: same contracts as the local one (atomic finalize on
// Close, sorted listings), no disk.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "sluice/io/file_system.h"

namespace sluice::io {
namespace {

using Blob = std::shared_ptr<const std::string>;

class MemoryRandomAccessFile final : public RandomAccessFile {
 public:
  MemoryRandomAccessFile(std::string path, Blob data)
      : path_(std::move(path)), data_(std::move(data)) {}
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return data_->size(); }
  Result<ByteView> Read(uint64_t offset, size_t n, char*) const override {
    if (offset >= data_->size()) return ByteView();
    return ByteView(*data_).substr(offset, n);
  }

 private:
  std::string path_;
  Blob data_;  // shared: stays valid after the file is deleted or replaced
};

class MemoryFileSystem;

class MemoryWritableFile final : public WritableFile {
 public:
  MemoryWritableFile(MemoryFileSystem* fs, std::string path) : fs_(fs), path_(std::move(path)) {}
  ~MemoryWritableFile() override { Abort(); }
  const std::string& path() const override { return path_; }
  uint64_t bytes_written() const override { return data_.size(); }
  Status Append(ByteView d) override {
    if (closed_) return FailedPrecondition("append to closed file " + path_);
    data_.append(d.data(), d.size());
    return Status::OK();
  }
  Status Close() override;
  void Abort() override {
    if (closed_) return;
    closed_ = true;
    status_ = Cancelled("write of " + path_ + " aborted");
  }

 private:
  MemoryFileSystem* fs_;
  std::string path_;
  std::string data_;
  bool closed_ = false;
  Status status_;
};

class MemoryFileSystem final : public FileSystem {
 public:
  std::string_view name() const override { return "memory"; }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return NotFound("open " + path + ": no such file");
    return std::unique_ptr<RandomAccessFile>(new MemoryRandomAccessFile(path, it->second));
  }
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions&) override {
    return std::unique_ptr<WritableFile>(new MemoryWritableFile(this, path));
  }
  Result<FileInfo> Stat(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(path);
    if (it != files_.end()) return FileInfo{path, it->second->size(), false, MtimeLocked(path)};
    if (IsDirLocked(path)) return FileInfo{path, 0, true};
    return NotFound("stat " + path + ": no such file");
  }
  Result<std::vector<FileInfo>> List(const std::string& dir) override {
    std::lock_guard<std::mutex> l(mu_);
    if (!IsDirLocked(dir)) return NotFound("list " + dir + ": no such directory");
    std::string prefix = dir == "/" ? "/" : dir + "/";
    std::map<std::string, FileInfo> out;
    for (const auto& [p, data] : files_) {
      if (p.compare(0, prefix.size(), prefix) != 0) continue;
      std::string rest = p.substr(prefix.size());
      size_t slash = rest.find('/');
      if (slash == std::string::npos)
        out[p] = FileInfo{p, data->size(), false, MtimeLocked(p)};
      else
        out[prefix + rest.substr(0, slash)] = FileInfo{prefix + rest.substr(0, slash), 0, true};
    }
    for (const auto& d : dirs_) {
      if (d.size() > prefix.size() && d.compare(0, prefix.size(), prefix) == 0 &&
          d.find('/', prefix.size()) == std::string::npos) {
        out[d] = FileInfo{d, 0, true};
      }
    }
    std::vector<FileInfo> v;
    for (auto& [_, info] : out) v.push_back(info);
    return v;
  }
  Status Delete(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    if (files_.erase(path) == 0) return NotFound("delete " + path + ": no such file");
    mtimes_.erase(path);
    return Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(from);
    if (it == files_.end()) return NotFound("rename " + from + ": no such file");
    files_[to] = it->second;
    files_.erase(from);
    mtimes_[to] = mtimes_[from];
    mtimes_.erase(from);
    return Status::OK();
  }
  Status CreateDirs(const std::string& dir) override {
    std::lock_guard<std::mutex> l(mu_);
    for (size_t pos = dir.find('/', 1); pos != std::string::npos; pos = dir.find('/', pos + 1)) {
      dirs_.insert(dir.substr(0, pos));
    }
    dirs_.insert(dir);
    return Status::OK();
  }

  Status PutIfAbsent(const std::string& path, ByteView data) override {
    std::lock_guard<std::mutex> l(mu_);
    if (files_.count(path) != 0 || dirs_.count(path) != 0) {
      return AlreadyExists(path + " already exists");
    }
    files_[path] = std::make_shared<const std::string>(data);
    mtimes_[path] = NowMs();
    return Status::OK();
  }

  void Publish(const std::string& path, std::string data) {
    std::lock_guard<std::mutex> l(mu_);
    files_[path] = std::make_shared<const std::string>(std::move(data));
    mtimes_[path] = NowMs();
  }

 private:
  bool IsDirLocked(const std::string& dir) const {
    if (dir == "/" || dir == "." || dirs_.count(dir)) return true;
    std::string prefix = dir + "/";
    auto it = files_.lower_bound(prefix);
    return it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  }

  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t MtimeLocked(const std::string& path) const {
    auto it = mtimes_.find(path);
    return it == mtimes_.end() ? 0 : it->second;
  }

  std::mutex mu_;
  std::map<std::string, Blob> files_;      // guarded by mu_
  std::map<std::string, int64_t> mtimes_;  // guarded by mu_: modification times, ms
  std::set<std::string> dirs_;             // guarded by mu_
};

Status MemoryWritableFile::Close() {
  if (closed_) return status_;
  closed_ = true;
  fs_->Publish(path_, std::move(data_));
  return Status::OK();
}

}  // namespace

std::unique_ptr<FileSystem> NewMemoryFileSystem() { return std::make_unique<MemoryFileSystem>(); }

}  // namespace sluice::io

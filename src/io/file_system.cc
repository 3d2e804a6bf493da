// FileSystem conveniences, path helpers and URI dispatch.
#include "sluice/io/file_system.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "io/url.h"
#include "sluice/base/thread_pool.h"
#include "sluice/io/s3_file_system.h"
#include "sluice/io/webhdfs_file_system.h"

namespace sluice::io {

namespace {

// The fallback mapping: a private, 16-byte-aligned copy of the file.
class InMemoryMapping final : public FileMapping {
 public:
  InMemoryMapping(std::unique_ptr<char[]> buffer, size_t size)
      : buffer_(std::move(buffer)), size_(size) {}
  ByteView data() const override { return ByteView(buffer_.get(), size_); }
  bool is_mapped() const override { return false; }

 private:
  std::unique_ptr<char[]> buffer_;  // operator new[] memory: aligned for any scalar type
  size_t size_;
};

}  // namespace

Result<std::unique_ptr<FileMapping>> RandomAccessFile::Map() const {
  const uint64_t n = size();
  auto buffer = std::make_unique_for_overwrite<char[]>(n == 0 ? 1 : n);
  SLUICE_ASSIGN_OR_RETURN(ByteView got, Read(0, n, buffer.get()));
  if (got.size() != n) {
    return DataLoss(path() + ": file shrank while reading (" + std::to_string(got.size()) + " of " +
                    std::to_string(n) + " bytes)");
  }
  if (n > 0 && got.data() != buffer.get()) std::memcpy(buffer.get(), got.data(), n);
  return std::unique_ptr<FileMapping>(new InMemoryMapping(std::move(buffer), n));
}

ThreadPool* IoExecutor() {
  // Blocking reads wait on the device, not the CPU: more threads than cores keep a disk or
  // a network file system busy. Never destroyed (reads may still complete at exit).
  static ThreadPool* pool = new ThreadPool(8);
  return pool;
}

void RandomAccessFile::ReadAsync(uint64_t offset, size_t n, ReadCallback done,
                                 const IoContext& context) const {
  ThreadPool* executor = context.executor != nullptr ? context.executor : IoExecutor();
  executor->Submit([this, offset, n, done = std::move(done), cancel = context.cancel,
                    buffer = context.buffer]() {
    if (cancel != nullptr && cancel->cancelled()) {
      done(Cancelled("read of " + path() + " cancelled"));
      return;
    }
    const uint64_t file_size = size();
    const size_t want =
        offset >= file_size ? 0 : static_cast<size_t>(std::min<uint64_t>(n, file_size - offset));
    done(ReadInto(offset, n, buffer ? buffer(want) : std::string()));
  });
}

Result<std::string> RandomAccessFile::ReadInto(uint64_t offset, size_t n,
                                               std::string buffer) const {
  const uint64_t file_size = size();
  const size_t want =
      offset >= file_size ? 0 : static_cast<size_t>(std::min<uint64_t>(n, file_size - offset));
  buffer.resize(want);  // a longer reused buffer shrinks without writing
  SLUICE_ASSIGN_OR_RETURN(ByteView got, Read(offset, want, buffer.data()));
  if (got.data() != buffer.data()) {
    buffer.assign(got.data(), got.size());
  } else {
    buffer.resize(got.size());
  }
  return buffer;
}

void GatherReads(size_t n, const std::function<void(size_t i, ReadCallback done)>& start,
                 RangesCallback done, const IoContext& context) {
  struct Gather {
    std::mutex mu;
    std::vector<std::string> parts;  // guarded by mu
    Status error;                    // guarded by mu
    size_t remaining;                // guarded by mu
    RangesCallback done;
  };
  auto g = std::make_shared<Gather>();
  g->parts.resize(n);
  g->remaining = n;
  g->done = std::move(done);
  if (n == 0) {
    ThreadPool* executor = context.executor != nullptr ? context.executor : IoExecutor();
    executor->Submit([g] { g->done(std::vector<std::string>()); });
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    start(i, [g, i](Result<std::string> r) {
      bool last;
      {
        std::lock_guard<std::mutex> lock(g->mu);
        if (r.ok()) {
          g->parts[i] = std::move(*r);
        } else if (g->error.ok()) {
          g->error = r.status();
        }
        last = --g->remaining == 0;
      }
      if (!last) return;
      if (g->error.ok()) {
        g->done(std::move(g->parts));
      } else {
        g->done(g->error);
      }
    });
  }
}

void RandomAccessFile::ReadRangesAsync(std::vector<ByteRange> ranges, RangesCallback done,
                                       const IoContext& context) const {
  GatherReads(
      ranges.size(),
      [&](size_t i, ReadCallback one) {
        ReadAsync(ranges[i].offset, static_cast<size_t>(ranges[i].length), std::move(one), context);
      },
      std::move(done), context);
}

Status FileSystem::PutIfAbsent(const std::string& path, ByteView) {
  return Unimplemented(std::string(name()) + " file system has no put-if-absent write (" + path +
                       ")");
}

Result<std::string> FileSystem::ReadAll(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto file, OpenForRead(path));
  std::string data(file->size(), '\0');
  SLUICE_ASSIGN_OR_RETURN(ByteView got, file->Read(0, data.size(), data.data()));
  if (got.size() != data.size()) {
    return DataLoss(path + ": file shrank while reading (" + std::to_string(got.size()) + " of " +
                    std::to_string(data.size()) + " bytes)");
  }
  if (got.data() != data.data()) data.assign(got.data(), got.size());
  return data;
}

Status FileSystem::WriteAll(const std::string& path, ByteView data) {
  SLUICE_ASSIGN_OR_RETURN(auto file, OpenForWrite(path));
  SLUICE_RETURN_IF_ERROR(file->Append(data));
  return file->Close();
}

bool FileSystem::Exists(const std::string& path) { return Stat(path).ok(); }

bool FileSystem::IsDirectory(const std::string& path) {
  Result<FileInfo> info = Stat(path);
  return info.ok() && info->is_directory;
}

namespace {
bool HasWildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }
}  // namespace

Result<std::vector<std::string>> FileSystem::Glob(const std::string& pattern) {
  // Expand one path component at a time, so "data/*/train-*.tfrecord" works.
  std::vector<std::string> prefixes;
  std::string_view rest = pattern;
  if (size_t scheme = rest.find("://"); scheme != std::string_view::npos) {
    // "s3://bucket/a/*": the scheme and authority are the root, never matched.
    size_t slash = rest.find('/', scheme + 3);
    prefixes.push_back(std::string(rest.substr(0, slash)));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  } else if (!rest.empty() && rest.front() == '/') {
    prefixes.push_back("/");
    rest.remove_prefix(1);
  } else {
    prefixes.push_back("");
  }
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string comp(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    bool last = rest.empty();
    std::vector<std::string> next;
    for (const auto& prefix : prefixes) {
      if (!HasWildcard(comp)) {
        std::string p = prefix.empty() ? comp : JoinPath(prefix, comp);
        if (!last || Exists(p)) next.push_back(std::move(p));
        continue;
      }
      auto entries = List(prefix.empty() ? "." : prefix);
      if (!entries.ok()) continue;
      for (const auto& e : *entries) {
        std::string base(Basename(e.path));
        if (::fnmatch(comp.c_str(), base.c_str(), FNM_PERIOD) != 0) continue;
        if (!last && !e.is_directory) continue;
        next.push_back(prefix.empty() ? base : JoinPath(prefix, base));
      }
    }
    prefixes = std::move(next);
  }
  std::sort(prefixes.begin(), prefixes.end());
  return prefixes;
}

Result<FileSystem*> FileSystemFor(std::string_view uri, std::string* local_path) {
  size_t sep = uri.find("://");
  if (sep == std::string_view::npos) {
    *local_path = std::string(uri);
    return LocalFileSystem();
  }
  std::string_view scheme = uri.substr(0, sep);
  if (scheme == "file") {
    *local_path = std::string(uri.substr(sep + 3));
    return LocalFileSystem();
  }
  if (scheme == "s3") {
    *local_path = std::string(uri);  // S3 paths are whole URIs
    return S3FileSystemFromEnvironment();
  }
  if (scheme == "hdfs" || scheme == "webhdfs") {
    *local_path = std::string(uri);  // WebHDFS paths are whole URIs too
    return static_cast<FileSystem*>(WebHdfsFileSystemFromEnvironment());
  }
  return Unimplemented("no file system for scheme '" + std::string(scheme) + "' in " +
                       RedactUrl(uri) + " (only local paths are supported so far)");
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (!b.empty() && b.front() == '/') return std::string(b);
  std::string out(a);
  if (out.back() != '/') out += '/';
  out += b;
  return out;
}

std::string_view Dirname(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace sluice::io

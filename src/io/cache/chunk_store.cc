// ChunkStore on local disk: chunks/<first 2 hex digits>/<32 hex digits>, temporaries
// "<32 hex>.tmp-<pid>-<n>" next to them, published by rename(2).
#include "chunk_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <utility>

#include "chunk_file.h"

namespace sluice::io::cache {
namespace {

constexpr int64_t kStaleTempNs = int64_t{24} * 3600 * 1000000000;
constexpr std::string_view kTempMarker = ".tmp-";

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads exactly n bytes at `offset` (fewer only at end of file).
Result<size_t> PreadFull(int fd, char* out, size_t n, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoStatus("read", path, errno);
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status WriteFull(int fd, ByteView a, ByteView b, const std::string& path) {
  iovec iov[2] = {{const_cast<char*>(a.data()), a.size()}, {const_cast<char*>(b.data()), b.size()}};
  int first = 0;
  while (first < 2) {
    ssize_t w = ::writev(fd, iov + first, 2 - first);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return ErrnoStatus("write", path, errno);
    size_t left = static_cast<size_t>(w);
    while (first < 2 && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < 2) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return Status::OK();
}

bool ProcessRuns(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

int64_t MtimeNs(const struct stat& st) {
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

int64_t NowNs() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// A temporary "<id>.tmp-<pid>-<n>" whose writer is gone or which is too old to be in use.
bool StaleTemp(std::string_view name, const struct stat& st) {
  size_t at = name.find(kTempMarker);
  long pid = std::strtol(std::string(name.substr(at + kTempMarker.size())).c_str(), nullptr, 10);
  return !ProcessRuns(pid) || NowNs() - MtimeNs(st) > kStaleTempNs;
}

}  // namespace

ChunkStore::ChunkStore(std::string dir, ChunkStoreOptions options)
    : dir_(std::move(dir)), options_(options) {}

std::string ChunkStore::PathOf(const ChunkId& id) const {
  std::string hex = id.Hex();
  return dir_ + "/" + hex.substr(0, 2) + "/" + hex;
}

Status ChunkStore::Init() const {
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus("mkdir", dir_, errno);
  return Status::OK();
}

Result<StagedChunk> ChunkStore::Stage(const ChunkId& id, std::string_view key,
                                      ByteView payload) const {
  static std::atomic<uint64_t> counter{0};
  StagedChunk staged{id, PathOf(id), 0};
  std::string folder = staged.temp_path.substr(0, staged.temp_path.rfind('/'));
  if (::mkdir(folder.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus("mkdir", folder, errno);
  }
  staged.temp_path += std::string(kTempMarker) + std::to_string(::getpid()) + "-" +
                      std::to_string(counter.fetch_add(1));
  Fd fd(::open(staged.temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoStatus("create", staged.temp_path, errno);
  std::string header = EncodeChunkHeader(key, payload);
  Status s = WriteFull(fd.get(), header, payload, staged.temp_path);
  if (s.ok() && options_.sync && ::fsync(fd.get()) != 0) {
    s = ErrnoStatus("fsync", staged.temp_path, errno);
  }
  if (s.ok() && ::close(fd.Release()) != 0) s = ErrnoStatus("close", staged.temp_path, errno);
  if (!s.ok()) {
    ::unlink(staged.temp_path.c_str());
    return s;
  }
  staged.file_bytes = header.size() + payload.size();
  return staged;
}

Status ChunkStore::Publish(const StagedChunk& staged) const {
  std::string final_path = PathOf(staged.id);
  if (::rename(staged.temp_path.c_str(), final_path.c_str()) != 0) {
    return ErrnoStatus("rename", staged.temp_path, errno);
  }
  return Status::OK();
}

void ChunkStore::Discard(const StagedChunk& staged) const { ::unlink(staged.temp_path.c_str()); }

Result<std::string> ChunkStore::Read(const ChunkId& id, std::string_view key, uint64_t length,
                                     uint64_t begin, uint64_t n,
                                     const std::function<std::string(size_t)>& buffer) const {
  const std::string path = PathOf(id);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus("open", path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("stat", path, errno);
  const uint64_t header_bytes = ChunkHeaderBytes(key.size(), length);
  if (static_cast<uint64_t>(st.st_size) != header_bytes + length) {
    return DataLoss(path + ": damaged cache file: " + std::to_string(st.st_size) +
                    " bytes, expected " + std::to_string(header_bytes + length));
  }
  std::string header_bytes_read(header_bytes, '\0');
  SLUICE_ASSIGN_OR_RETURN(size_t got,
                          PreadFull(fd.get(), header_bytes_read.data(), header_bytes, 0, path));
  header_bytes_read.resize(got);
  SLUICE_ASSIGN_OR_RETURN(ChunkHeader header,
                          DecodeChunkHeader(header_bytes_read, key, length, path));
  if (begin > length) begin = length;
  if (n > length - begin) n = length - begin;
  const uint64_t first_page = begin / kChunkPageBytes;
  const uint64_t page_begin = first_page * kChunkPageBytes;
  const uint64_t page_end =
      std::min(length, (begin + n + kChunkPageBytes - 1) / kChunkPageBytes * kChunkPageBytes);
  std::string pages = buffer ? buffer(page_end - page_begin) : std::string();
  pages.resize(page_end - page_begin);  // a longer reused buffer shrinks without writing
  SLUICE_ASSIGN_OR_RETURN(
      got, PreadFull(fd.get(), pages.data(), pages.size(), header_bytes + page_begin, path));
  if (got != pages.size()) return DataLoss(path + ": damaged cache file: truncated");
  SLUICE_RETURN_IF_ERROR(VerifyChunkPages(header, first_page, pages, path));
  // The range within the pages, in place (no second buffer to fault in).
  pages.erase(0, begin - page_begin);
  pages.resize(n);
  return pages;
}

Result<uint64_t> ChunkStore::FileBytes(const ChunkId& id) const {
  const std::string path = PathOf(id);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

Result<uint64_t> ChunkStore::Delete(const ChunkId& id) const {
  const std::string path = PathOf(id);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return uint64_t{0};
    return ErrnoStatus("stat", path, errno);
  }
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return uint64_t{0};
    return ErrnoStatus("delete", path, errno);
  }
  return static_cast<uint64_t>(st.st_size);
}

Status ChunkStore::ForEachFile(const std::function<void(std::string_view, const std::string&,
                                                        const struct stat&)>& visit) const {
  DIR* top = ::opendir(dir_.c_str());
  if (top == nullptr) return ErrnoStatus("list", dir_, errno);
  std::vector<std::string> folders;
  while (dirent* e = ::readdir(top)) {
    std::string_view name = e->d_name;
    if (name.size() == 2 && name != "..") folders.push_back(dir_ + "/" + std::string(name));
  }
  ::closedir(top);
  for (const std::string& folder : folders) {
    DIR* d = ::opendir(folder.c_str());
    if (d == nullptr) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      return ErrnoStatus("list", folder, errno);
    }
    while (dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      std::string path = folder + "/" + std::string(name);
      struct stat st;
      if (name.size() < 32 || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      visit(name, path, st);
    }
    ::closedir(d);
  }
  return Status::OK();
}

Result<std::vector<StoredChunk>> ChunkStore::Scan(bool remove_stale_temps) const {
  std::vector<StoredChunk> out;
  SLUICE_RETURN_IF_ERROR(
      ForEachFile([&](std::string_view name, const std::string& path, const struct stat& st) {
        if (name.find(kTempMarker) != std::string_view::npos) {
          if (remove_stale_temps && StaleTemp(name, st)) ::unlink(path.c_str());
        } else if (auto id = ChunkId::FromHex(name)) {
          out.push_back({*id, static_cast<uint64_t>(st.st_size), MtimeNs(st)});
        }
      }));
  return out;
}

Result<std::pair<uint64_t, uint64_t>> ChunkStore::Temporaries() const {
  std::pair<uint64_t, uint64_t> out{0, 0};
  SLUICE_RETURN_IF_ERROR(
      ForEachFile([&](std::string_view name, const std::string&, const struct stat& st) {
        if (name.find(kTempMarker) == std::string_view::npos) return;
        ++out.first;
        out.second += static_cast<uint64_t>(st.st_size);
      }));
  return out;
}

Result<std::string> ChunkStore::KeyOf(const ChunkId& id) const {
  const std::string path = PathOf(id);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus("open", path, errno);
  std::string head(kChunkFixedHeaderBytes + kMaxChunkKeyBytes, '\0');
  SLUICE_ASSIGN_OR_RETURN(size_t got, PreadFull(fd.get(), head.data(), head.size(), 0, path));
  head.resize(got);
  if (got < kChunkFixedHeaderBytes) return DataLoss(path + ": damaged cache file: too short");
  const uint64_t length = DecodeFixed64(head.data() + 16);
  const uint64_t key_bytes = DecodeFixed32(head.data() + 24);
  if (key_bytes > kMaxChunkKeyBytes) return DataLoss(path + ": damaged cache file: key length");
  const uint64_t header_bytes = ChunkHeaderBytes(key_bytes, length);
  if (header_bytes > (uint64_t{1} << 30)) return DataLoss(path + ": damaged cache file: length");
  head.resize(header_bytes);
  SLUICE_ASSIGN_OR_RETURN(got, PreadFull(fd.get(), head.data(), header_bytes, 0, path));
  head.resize(got);
  SLUICE_ASSIGN_OR_RETURN(ChunkHeader header, DecodeAnyChunkHeader(head, path));
  return header.key;
}

}  // namespace sluice::io::cache

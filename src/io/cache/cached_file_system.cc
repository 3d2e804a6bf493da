// CachedFileSystem: splits reads into the chunks they fall in and reads those through the
// Cache; everything else goes to the remote file system.
#include "sluice/io/cache/cached_file_system.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>

namespace sluice::io::cache {

std::string FileIdentity(std::string_view fs_name, const std::string& path, uint64_t size) {
  std::string where = path;
  if (fs_name == "local") {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) {
      where = resolved;
    } else if (!path.empty() && path[0] != '/') {
      char cwd[PATH_MAX];
      if (::getcwd(cwd, sizeof cwd) != nullptr) where = JoinPath(cwd, path);
    }
  }
  return std::string(fs_name) + ":" + where + "#" + std::to_string(size);
}

std::string ChunkKey(std::string_view file_identity, uint64_t offset, uint64_t length) {
  return std::string(file_identity) + "@" + std::to_string(offset) + "+" + std::to_string(length);
}

// The chunk ranges of one file (from plans) and the block size elsewhere.
// Threading: safe from many threads.
class CachedFileSystem::Layout {
 public:
  Layout(uint64_t size, uint64_t block) : size_(size), block_(std::max<uint64_t>(1, block)) {}
  uint64_t size() const { return size_; }

  void Add(uint64_t offset, uint64_t length) {
    if (length == 0 || offset >= size_) return;
    std::lock_guard<std::mutex> lock(mu_);
    chunks_[offset] = std::min(length, size_ - offset);
  }

  // The [begin, end) of the chunk serving byte `pos` (< size): a planned chunk containing it,
  // else the aligned block containing it, clipped to the planned chunks around it.
  std::pair<uint64_t, uint64_t> ChunkAt(uint64_t pos) const {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t lo = 0, hi = size_;
    auto next = chunks_.upper_bound(pos);
    if (next != chunks_.begin()) {
      auto prev = std::prev(next);
      if (pos < prev->first + prev->second) return {prev->first, prev->first + prev->second};
      lo = prev->first + prev->second;
    }
    if (next != chunks_.end()) hi = next->first;
    uint64_t begin = std::max(lo, pos / block_ * block_);
    uint64_t end = std::min(hi, pos / block_ * block_ + block_);
    return {begin, end};
  }

 private:
  const uint64_t size_;
  const uint64_t block_;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> chunks_;  // offset -> length; guarded by mu_
};

namespace {

using Layout = CachedFileSystem::Layout;

// Collects the pieces of one read served by several chunks.
struct Gather {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> parts;
  size_t left = 0;
  Status error;
  ReadCallback done;  // async reads; null for blocking ones
};

class CachedFile final : public RandomAccessFile {
 public:
  CachedFile(std::string path, std::shared_ptr<const RandomAccessFile> remote, std::string identity,
             std::shared_ptr<Layout> layout, std::shared_ptr<Cache> cache)
      : path_(std::move(path)),
        remote_(std::move(remote)),
        identity_(std::move(identity)),
        layout_(std::move(layout)),
        cache_(std::move(cache)) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return layout_->size(); }

  Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
    auto g = std::make_shared<Gather>();
    Start(offset, n, g, {});
    std::unique_lock<std::mutex> lock(g->mu);
    g->cv.wait(lock, [&] { return g->left == 0; });
    if (!g->error.ok()) return g->error;
    size_t at = 0;
    for (const std::string& p : g->parts) {
      std::copy(p.begin(), p.end(), scratch + at);
      at += p.size();
    }
    return ByteView(scratch, at);
  }

  Result<ByteView> ReadUncached(uint64_t offset, size_t n, char* scratch) const override {
    return remote_->Read(offset, n, scratch);
  }

  void ReadAsync(uint64_t offset, size_t n, ReadCallback done,
                 const IoContext& context) const override {
    auto g = std::make_shared<Gather>();
    g->done = std::move(done);
    if (!Start(offset, n, g, context)) {
      // Nothing to read: still never call back inline.
      ThreadPool* executor = context.executor != nullptr ? context.executor : IoExecutor();
      executor->Submit([g] { g->done(std::string()); });
    }
  }

 private:
  // Issues one cache read per chunk the range touches; false when the range is empty.
  bool Start(uint64_t offset, size_t n, const std::shared_ptr<Gather>& g,
             const IoContext& context) const {
    const uint64_t end = std::min<uint64_t>(size(), offset + n);
    std::vector<std::pair<ChunkRef, std::pair<uint64_t, uint64_t>>> pieces;
    for (uint64_t pos = offset; pos < end;) {
      auto [cb, ce] = layout_->ChunkAt(pos);
      ChunkRef c;
      c.key = ChunkKey(identity_, cb, ce - cb);
      c.id = ChunkIdOf(c.key);
      c.remote = remote_;
      c.offset = cb;
      c.length = ce - cb;
      uint64_t stop = std::min(end, ce);
      pieces.push_back({std::move(c), {pos - cb, stop - pos}});
      pos = stop;
    }
    if (pieces.empty()) {
      g->left = 0;
      return false;
    }
    g->parts.resize(pieces.size());
    g->left = pieces.size();
    for (size_t i = 0; i < pieces.size(); ++i) {
      auto& [chunk, range] = pieces[i];
      cache_->Read(
          chunk, range.first, range.second,
          [g, i](Result<std::string> got) { Deliver(g, i, std::move(got)); }, context);
    }
    return true;
  }

  static void Deliver(const std::shared_ptr<Gather>& g, size_t i, Result<std::string> got) {
    std::unique_lock<std::mutex> lock(g->mu);
    if (got.ok()) {
      g->parts[i] = std::move(*got);
    } else if (g->error.ok()) {
      g->error = got.status();
    }
    if (--g->left > 0) return;
    if (g->done == nullptr) {
      g->cv.notify_all();
      return;
    }
    lock.unlock();
    if (!g->error.ok()) return g->done(g->error);
    if (g->parts.size() == 1) return g->done(std::move(g->parts[0]));
    std::string all;
    for (const std::string& p : g->parts) all += p;
    g->done(std::move(all));
  }

  std::string path_;
  std::shared_ptr<const RandomAccessFile> remote_;
  std::string identity_;
  std::shared_ptr<Layout> layout_;
  std::shared_ptr<Cache> cache_;
};

}  // namespace

CachedFileSystem::CachedFileSystem(FileSystem* remote, std::shared_ptr<Cache> cache)
    : remote_(remote), cache_(std::move(cache)) {}

Result<CachedFileSystem::OpenFile> CachedFileSystem::Open(const std::string& path,
                                                          const FileInfo* listed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(path);
    if (it != files_.end()) return it->second;
  }
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<RandomAccessFile> file,
      listed != nullptr ? remote_->OpenListedForRead(*listed) : remote_->OpenForRead(path));
  OpenFile f;
  f.identity = FileIdentity(remote_->name(), path, file->size());
  f.layout = std::make_shared<Layout>(file->size(), cache_->options().block_bytes);
  f.remote = std::move(file);
  std::lock_guard<std::mutex> lock(mu_);
  return files_.emplace(path, std::move(f)).first->second;
}

Result<std::unique_ptr<RandomAccessFile>> CachedFileSystem::OpenForRead(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(OpenFile f, Open(path));
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<CachedFile>(path, f.remote, f.identity, f.layout, cache_));
}

Result<std::unique_ptr<RandomAccessFile>> CachedFileSystem::OpenListedForRead(
    const FileInfo& listed) {
  SLUICE_ASSIGN_OR_RETURN(OpenFile f, Open(listed.path, &listed));
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<CachedFile>(listed.path, f.remote, f.identity, f.layout, cache_));
}

Result<ChunkRef> CachedFileSystem::Chunk(const std::string& path, uint64_t offset,
                                         uint64_t length) {
  SLUICE_ASSIGN_OR_RETURN(OpenFile f, Open(path));
  if (offset > f.layout->size()) offset = f.layout->size();
  length = std::min(length, f.layout->size() - offset);
  f.layout->Add(offset, length);
  ChunkRef c;
  c.key = ChunkKey(f.identity, offset, length);
  c.id = ChunkIdOf(c.key);
  c.remote = f.remote;
  c.offset = offset;
  c.length = length;
  return c;
}

Result<uint64_t> CachedFileSystem::SetPlan(const std::vector<PlannedRead>& reads) {
  CachePlan plan;
  std::unordered_map<ChunkId, uint32_t, ChunkIdHash> index;
  for (const PlannedRead& r : reads) {
    SLUICE_ASSIGN_OR_RETURN(ChunkRef c, Chunk(r.path, r.offset, r.length));
    auto [it, fresh] = index.emplace(c.id, static_cast<uint32_t>(plan.chunks.size()));
    if (fresh) plan.chunks.push_back(std::move(c));
    plan.uses.push_back({it->second, r.window});
  }
  return cache_->SetPlan(std::move(plan));
}

Result<FileSystem*> CachedFileSystemFor(FileSystem* remote, const CacheOptions& options) {
  static std::mutex mu;
  static auto* systems = new std::map<std::pair<FileSystem*, std::string>,
                                      std::unique_ptr<CachedFileSystem>>();  // never destroyed
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, SharedCache(options));
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*systems)[{remote, cache->dir()}];
  if (slot == nullptr) slot = std::make_unique<CachedFileSystem>(remote, cache);
  return slot.get();
}

Result<uint64_t> AnnouncePlan(FileSystem* fs, const std::vector<PlannedRead>& reads) {
  auto* cached = dynamic_cast<CachedFileSystem*>(fs);
  if (cached == nullptr) return uint64_t{0};
  return cached->SetPlan(reads);
}

void WithdrawPlan(FileSystem* fs, uint64_t id) {
  auto* cached = dynamic_cast<CachedFileSystem*>(fs);
  if (cached != nullptr && id != 0) cached->WithdrawPlan(id);
}

}  // namespace sluice::io::cache

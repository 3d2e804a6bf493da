// A FileSystem that reads another one (S3, HDFS, NFS, a slow disk) through the node-local
// cache (docs/cache.md). Reads are served by whole chunks: a read inside a chunk the plan
// named (a zstd frame, a run of records) is served from that chunk; any other read from
// aligned blocks of CacheOptions::block_bytes. Everything but reads goes to the remote file
// system unchanged (writes are not cached).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/io/cache/cache.h"
#include "sluice/io/file_system.h"

namespace sluice::io::cache {

// Keys (docs/cache.md, "Keys"): a file's identity is "<file system>:<path>#<size>" (local
// paths made absolute and resolved), a chunk's key is "<identity>@<offset>+<length>". Two
// datasets share a chunk only if they read the same bytes of the same file.
std::string FileIdentity(std::string_view fs_name, const std::string& path, uint64_t size);
std::string ChunkKey(std::string_view file_identity, uint64_t offset, uint64_t length);

// One future read of a chunk, as the order plans it for the node.
struct PlannedRead {
  std::string path;  // as given to the file system
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t window = 0;  // the order's window; non-decreasing along a plan
};

class CachedFileSystem final : public FileSystem {
 public:
  // `remote` must outlive this object.
  CachedFileSystem(FileSystem* remote, std::shared_ptr<Cache> cache);
  std::string_view name() const override { return "cached"; }
  Cache* cache() const { return cache_.get(); }
  FileSystem* remote() const { return remote_; }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  // The remote's listed open (on S3: no HEAD), cached like OpenForRead.
  Result<std::unique_ptr<RandomAccessFile>> OpenListedForRead(const FileInfo& listed) override;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options) override {
    return remote_->OpenForWrite(path, options);
  }
  Result<FileInfo> Stat(const std::string& path) override { return remote_->Stat(path); }
  Result<std::vector<FileInfo>> List(const std::string& dir) override { return remote_->List(dir); }
  Status Delete(const std::string& path) override { return remote_->Delete(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return remote_->Rename(from, to);
  }
  Status CreateDirs(const std::string& dir) override { return remote_->CreateDirs(dir); }
  Status PutIfAbsent(const std::string& path, ByteView data) override {
    return remote_->PutIfAbsent(path, data);
  }
  bool IsDirectory(const std::string& path) override { return remote_->IsDirectory(path); }

  // Tells the cache the node's future reads: their byte ranges become the chunks of their
  // files, and the cache evicts and prefetches along them. Returns the plan's id: the reader
  // that announced it withdraws it when it ends (WithdrawPlan).
  Result<uint64_t> SetPlan(const std::vector<PlannedRead>& reads);
  void WithdrawPlan(uint64_t id) { cache_->WithdrawPlan(id); }
  // The chunk of `path` covering [offset, offset + length) exactly (e.g. for `cache warm`).
  Result<ChunkRef> Chunk(const std::string& path, uint64_t offset, uint64_t length);

  // The chunks a file's reads are served from, by offset: the plan's, and blocks elsewhere.
  class Layout;

 private:
  struct OpenFile {
    std::shared_ptr<const RandomAccessFile> remote;
    std::string identity;
    std::shared_ptr<Layout> layout;
  };
  // `listed`: open from a listing (FileSystem::OpenListedForRead) rather than by path.
  Result<OpenFile> Open(const std::string& path, const FileInfo* listed = nullptr);

  FileSystem* remote_;
  std::shared_ptr<Cache> cache_;
  std::mutex mu_;
  std::map<std::string, OpenFile> files_;  // by path; guarded by mu_
};

// The cached view of `remote` through the cache of `options.dir`, for this process (created
// once per (remote, directory), alive until exit).
Result<FileSystem*> CachedFileSystemFor(FileSystem* remote, const CacheOptions& options);

// Hands a plan to `fs` when it is a CachedFileSystem and returns its id; does nothing and
// returns 0 otherwise.
Result<uint64_t> AnnouncePlan(FileSystem* fs, const std::vector<PlannedRead>& reads);
// Withdraws plan `id` of `fs` (AnnouncePlan's) unless a later plan replaced it: prefetching
// for a reader ends with the reader.
void WithdrawPlan(FileSystem* fs, uint64_t id);

}  // namespace sluice::io::cache

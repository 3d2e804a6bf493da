// ListedFileSystem: a file system as a listing saw it. Opening an object on S3 is a HEAD for
// its size and ETag before the first GET; a reader that has just listed the directory knows
// both already. Opening a dataset of N shards with indexes from S3 made 2N such HEADs, each
// a round trip and about a millisecond of the server's CPU (bench/s3).
//
// OpenForRead and Stat of a listed file are answered from the listing
// (FileSystem::OpenListedForRead: on S3 no request; the ETag is still checked on every GET,
// so an object replaced since the listing fails its reads, never mixes versions). Anything
// else, and files not in the listing, go to the wrapped file system.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sluice/io/file_system.h"

namespace sluice::io {

class ListedFileSystem final : public FileSystem {
 public:
  // `base` must outlive this object. Directories in `listed` are ignored.
  ListedFileSystem(FileSystem* base, const std::vector<FileInfo>& listed);

  size_t listed_files() const { return listed_.size(); }

  std::string_view name() const override { return base_->name(); }
  bool merges_ranges() const override { return base_->merges_ranges(); }
  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> OpenListedForRead(const FileInfo& listed) override {
    return base_->OpenListedForRead(listed);
  }
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options = {}) override {
    return base_->OpenForWrite(path, options);
  }
  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::vector<FileInfo>> List(const std::string& dir) override { return base_->List(dir); }
  Status Delete(const std::string& path) override { return base_->Delete(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status PutIfAbsent(const std::string& path, ByteView data) override {
    return base_->PutIfAbsent(path, data);
  }
  Result<std::string> RealPath(const std::string& path) override { return base_->RealPath(path); }
  bool IsDirectory(const std::string& path) override { return base_->IsDirectory(path); }

 private:
  FileSystem* const base_;
  std::unordered_map<std::string, FileInfo> listed_;
};

}  // namespace sluice::io

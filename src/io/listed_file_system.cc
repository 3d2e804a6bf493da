// ListedFileSystem (include/sluice/io/listed_file_system.h).
#include "sluice/io/listed_file_system.h"

namespace sluice::io {

ListedFileSystem::ListedFileSystem(FileSystem* base, const std::vector<FileInfo>& listed)
    : base_(base) {
  for (const FileInfo& f : listed) {
    if (!f.is_directory) listed_.emplace(f.path, f);
  }
}

Result<std::unique_ptr<RandomAccessFile>> ListedFileSystem::OpenForRead(const std::string& path) {
  auto it = listed_.find(path);
  if (it == listed_.end()) return base_->OpenForRead(path);
  return base_->OpenListedForRead(it->second);
}

Result<FileInfo> ListedFileSystem::Stat(const std::string& path) {
  auto it = listed_.find(path);
  if (it == listed_.end()) return base_->Stat(path);
  return it->second;
}

}  // namespace sluice::io

// LogStore over io::FileSystem: the adapter between the log's six storage promises and the
// FileSystem interface every backend implements.
#include "sluice/table/log_store.h"

namespace sluice::table {
namespace {

class FileSystemLogStore final : public LogStore {
 public:
  explicit FileSystemLogStore(io::FileSystem* fs) : fs_(fs) {}

  Result<std::vector<LogFileMeta>> List(const std::string& dir,
                                        std::string_view start_after) override {
    SLUICE_ASSIGN_OR_RETURN(std::vector<io::FileInfo> entries, fs_->List(dir));
    std::vector<LogFileMeta> out;
    for (io::FileInfo& e : entries) {
      if (e.is_directory) continue;
      if (!start_after.empty() && io::Basename(e.path) <= start_after) continue;
      out.push_back(LogFileMeta{std::move(e.path), e.size, e.modification_time_ms});
    }
    return out;  // FileSystem::List is sorted by name already
  }

  Result<std::string> Read(const std::string& path) override { return fs_->ReadAll(path); }

  // The first commit of a table also creates its _delta_log directory (on stores that have
  // directories).
  Status PutIfAbsent(const std::string& path, std::string_view data) override {
    Status s = fs_->PutIfAbsent(path, ByteView(data));
    if (s.code() != StatusCode::kNotFound) return s;
    SLUICE_RETURN_IF_ERROR(fs_->CreateDirs(std::string(io::Dirname(path))));
    return fs_->PutIfAbsent(path, ByteView(data));
  }

  Status Put(const std::string& path, std::string_view data) override {
    return fs_->WriteAll(path, ByteView(data));
  }

  Result<LogFileMeta> Head(const std::string& path) override {
    SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, fs_->Stat(path));
    if (info.is_directory) return NotFound(path + " is a directory, not a log file");
    return LogFileMeta{std::move(info.path), info.size, info.modification_time_ms};
  }

  Status Delete(const std::string& path) override {
    Status s = fs_->Delete(path);
    return s.code() == StatusCode::kNotFound ? Status::OK() : s;
  }

 private:
  io::FileSystem* const fs_;
};

}  // namespace

std::unique_ptr<LogStore> NewFileSystemLogStore(io::FileSystem* fs) {
  return std::make_unique<FileSystemLogStore>(fs);
}

}  // namespace sluice::table

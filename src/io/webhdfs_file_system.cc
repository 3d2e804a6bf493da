// The WebHDFS file system (webhdfs_file_system.h): FileSystem's methods as WebHDFS REST
// operations, and the locality call of distributed jobs.
#include "sluice/io/webhdfs_file_system.h"

#include <algorithm>
#include <cstdlib>

#include "io/webhdfs_client.h"

namespace sluice::io {

using webhdfs::HdfsUri;

namespace {

Result<HdfsUri> Parse(const std::string& path) { return webhdfs::ParseHdfsUri(path); }

Status SameNamenode(const HdfsUri& a, const HdfsUri& b) {
  if (a.host == b.host && a.port == b.port) return Status::OK();
  return InvalidArgument("cannot rename across HDFS clusters: " + a.ToString() + " to " +
                         b.ToString());
}

}  // namespace

WebHdfsOptions WebHdfsOptionsFromEnvironment() {
  WebHdfsOptions options;
  for (const char* name : {"HADOOP_USER_NAME", "USER", "LOGNAME"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      options.user = value;
      break;
    }
  }
  return options;
}

WebHdfsFileSystem::WebHdfsFileSystem(WebHdfsOptions options)
    : options_(std::move(options)), client_(std::make_shared<Client>(options_)) {}

WebHdfsFileSystem::~WebHdfsFileSystem() = default;

Result<std::unique_ptr<RandomAccessFile>> WebHdfsFileSystem::OpenForRead(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(path));
  SLUICE_ASSIGN_OR_RETURN(webhdfs::FileStatus status, client_->GetFileStatus(uri));
  if (status.is_directory) return FailedPrecondition(path + " is a directory, not a file");
  return NewWebHdfsReadFile(client_, path, std::move(uri), status.length);
}

Result<std::unique_ptr<WritableFile>> WebHdfsFileSystem::OpenForWrite(const std::string& path,
                                                                      const WriteOptions&) {
  // WriteOptions::durable needs nothing more: a closed HDFS file is on its DataNodes' pipeline.
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(path));
  if (uri.path == "/") return InvalidArgument(path + ": cannot write the root directory");
  return NewWebHdfsWriteFile(client_, path, std::move(uri));
}

Result<FileInfo> WebHdfsFileSystem::Stat(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(path));
  SLUICE_ASSIGN_OR_RETURN(webhdfs::FileStatus status, client_->GetFileStatus(uri));
  return FileInfo{path, status.length, status.is_directory,
                  static_cast<int64_t>(status.modification_time_ms)};
}

Result<std::vector<FileInfo>> WebHdfsFileSystem::List(const std::string& dir) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(dir));
  SLUICE_ASSIGN_OR_RETURN(auto entries, client_->ListStatus(uri));
  // LISTSTATUS of a file answers the file itself, with an empty name.
  if (entries.size() == 1 && entries[0].path_suffix.empty() && !entries[0].is_directory) {
    return FailedPrecondition(dir + " is a file, not a directory");
  }
  std::vector<FileInfo> out;
  out.reserve(entries.size());
  for (const auto& e : entries) {
    if (e.path_suffix.empty() || e.path_suffix.find('/') != std::string::npos) {
      return IoError("WebHDFS LISTSTATUS " + uri.ToString() + ": bad entry name '" + e.path_suffix +
                     "'");
    }
    out.push_back(FileInfo{JoinPath(dir, e.path_suffix), e.length, e.is_directory,
                           static_cast<int64_t>(e.modification_time_ms)});
  }
  std::sort(out.begin(), out.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.path < b.path; });
  return out;
}

Status WebHdfsFileSystem::Delete(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(path));
  SLUICE_ASSIGN_OR_RETURN(bool deleted, client_->Delete(uri, /*recursive=*/false));
  if (!deleted) return NotFound(path + ": no such file to delete");
  return Status::OK();
}

Status WebHdfsFileSystem::Rename(const std::string& from, const std::string& to) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri source, Parse(from));
  SLUICE_ASSIGN_OR_RETURN(HdfsUri target, Parse(to));
  SLUICE_RETURN_IF_ERROR(SameNamenode(source, target));
  return client_->Rename(source, target, /*overwrite=*/true);
}

Status WebHdfsFileSystem::CreateDirs(const std::string& dir) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(dir));
  return client_->Mkdirs(uri);
}

Status WebHdfsFileSystem::PutIfAbsent(const std::string& path, ByteView data) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(path));
  const HdfsUri tmp = TemporaryName(uri);
  auto body = std::make_shared<const std::string>(data.data(), data.size());
  Status s = client_->UploadAndWait(Client::UploadOp::kCreate, tmp, std::move(body));
  if (!s.ok()) {
    (void)client_->Delete(tmp, /*recursive=*/false);
    return s;
  }
  s = client_->Rename(tmp, uri, /*overwrite=*/false);
  if (s.code() == StatusCode::kAlreadyExists || s.code() == StatusCode::kNotFound) {
    // Only this call knows the temporary's name: if it is gone, an earlier try of this rename
    // won and its reply was lost (resent by the engine, or by curl itself on a dead
    // kept-alive connection, which the attempt count does not show).
    auto left = client_->GetFileStatus(tmp);
    if (left.status().code() == StatusCode::kNotFound) return Status::OK();
  }
  if (!s.ok()) (void)client_->Delete(tmp, /*recursive=*/false);
  if (s.code() == StatusCode::kAlreadyExists) return AlreadyExists(path + " already exists");
  return s;
}

Result<std::vector<BlockLocation>> WebHdfsFileSystem::GetBlockLocations(const std::string& path,
                                                                        uint64_t offset,
                                                                        uint64_t length) {
  SLUICE_ASSIGN_OR_RETURN(HdfsUri uri, Parse(path));
  return client_->BlockLocations(uri, offset, length);
}

WebHdfsFileSystem* WebHdfsFileSystemFromEnvironment() {
  static WebHdfsFileSystem* fs = new WebHdfsFileSystem(WebHdfsOptionsFromEnvironment());
  return fs;
}

Result<std::vector<BlockLocation>> FileBlockLocations(std::string_view uri) {
  std::string path;
  SLUICE_ASSIGN_OR_RETURN(FileSystem * fs, FileSystemFor(uri, &path));
  if (auto* hdfs = dynamic_cast<WebHdfsFileSystem*>(fs)) return hdfs->GetBlockLocations(path);
  SLUICE_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.is_directory) return FailedPrecondition(std::string(uri) + " is a directory");
  std::vector<BlockLocation> blocks;
  if (info.size > 0) blocks.push_back(BlockLocation{0, info.size, {}, {}, false});
  return blocks;
}

}  // namespace sluice::io

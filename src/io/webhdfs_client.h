// What the WebHDFS file system and its files share (webhdfs_file_system.h): the HTTP engine,
// the user, the retry policy; it builds each REST request and turns replies into values or a
// Status naming the operation, the hdfs:// URI, the HTTP status and the RemoteException.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/webhdfs_json.h"
#include "io/webhdfs_url.h"
#include "sluice/io/http_engine.h"
#include "sluice/io/webhdfs_file_system.h"

namespace sluice::io {

// Threading: every method may be called from any thread (the object is immutable).
class WebHdfsFileSystem::Client {
 public:
  explicit Client(const WebHdfsOptions& options);

  HttpEngine* engine() const { return engine_; }
  const WebHdfsOptions& options() const { return options_; }

  // The request for `op` on `uri`: its REST URL with user.name and `params`, labelled
  // "OP hdfs://..." for errors (the URL's query is never quoted), with the WebHDFS retry
  // policy and the options' deadline.
  HttpRequest Request(std::string method, const webhdfs::HdfsUri& uri, std::string_view op,
                      const webhdfs::QueryParams& params = {}) const;
  // The Status of a reply whose HTTP status is not `expected`.
  Status Check(const Result<HttpResponse>& reply, long expected, std::string_view op,
               const webhdfs::HdfsUri& uri) const;
  // Sends and waits; a reply other than `expected` is an error.
  Result<HttpResponse> Call(HttpRequest request, std::string_view op, const webhdfs::HdfsUri& uri,
                            long expected = 200) const;

  Result<webhdfs::FileStatus> GetFileStatus(const webhdfs::HdfsUri& uri) const;
  Result<std::vector<webhdfs::FileStatus>> ListStatus(const webhdfs::HdfsUri& uri) const;
  Result<bool> Delete(const webhdfs::HdfsUri& uri, bool recursive) const;
  Status Mkdirs(const webhdfs::HdfsUri& uri) const;
  // rename2: OVERWRITE replaces a file at `to`; without it an existing `to` is AlreadyExists.
  // A resent rename whose first try went through sees its own result (source gone, or
  // destination taken): callers that know the source's name is theirs check for that.
  Status Rename(const webhdfs::HdfsUri& from, const webhdfs::HdfsUri& to, bool overwrite) const;
  Result<std::vector<BlockLocation>> BlockLocations(const webhdfs::HdfsUri& uri, uint64_t offset,
                                                    uint64_t length) const;

  // The two steps of CREATE (overwrite) or APPEND: ask the NameNode where to write (a 307 to
  // a datanode), then send `body` there. `done` runs once on the engine thread. A failed
  // APPEND body is not retried here (it may have been applied): the writer checks the length.
  enum class UploadOp { kCreate, kAppend };
  void Upload(UploadOp op, const webhdfs::HdfsUri& uri, std::shared_ptr<const std::string> body,
              std::function<void(Status)> done) const;
  Status UploadAndWait(UploadOp op, const webhdfs::HdfsUri& uri,
                       std::shared_ptr<const std::string> body) const;

 private:
  WebHdfsOptions options_;
  HttpEngine* engine_;
  std::shared_ptr<const RetryPolicy> retry_;
  // Set once a NameNode refused GETFILEBLOCKLOCATIONS (older than Hadoop 3.3?): later calls
  // go straight to GET_BLOCK_LOCATIONS, as Hadoop's own client does.
  mutable std::atomic<bool> legacy_block_locations_{false};
};

// The file objects (webhdfs_read_file.cc, webhdfs_write_file.cc).
std::unique_ptr<RandomAccessFile> NewWebHdfsReadFile(
    std::shared_ptr<const WebHdfsFileSystem::Client> client, std::string path, webhdfs::HdfsUri uri,
    uint64_t size);
std::unique_ptr<WritableFile> NewWebHdfsWriteFile(
    std::shared_ptr<const WebHdfsFileSystem::Client> client, std::string path,
    webhdfs::HdfsUri uri);

// A temporary name next to `uri` for a file being written: "<name>.tmp-<16 hex digits>".
webhdfs::HdfsUri TemporaryName(const webhdfs::HdfsUri& uri);

}  // namespace sluice::io

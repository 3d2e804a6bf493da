// HDFS through its WebHDFS REST API (docs/hdfs.md), on the asynchronous HTTP engine shared
// with S3 (sluice/io/http_engine.h). Paths are whole URIs: "hdfs://namenode:9870/data/x"
// (also "webhdfs://"), where the port is the NameNode's HTTP port. Reads are ranged OPENs
// (redirected to a datanode) with many in flight; writes go to a temporary name with CREATE
// (+ APPEND per buffer) and are renamed into place on Close.
//
// Tested only against tests/tools/webhdfs_server.py, a server written from the REST
// specification: no Hadoop cluster was available where sluice was built.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/io/block_location.h"
#include "sluice/io/file_system.h"
#include "sluice/io/retry_policy.h"

namespace sluice::io {

class HttpEngine;

struct WebHdfsOptions {
  // The HDFS user sent as `user.name` (clusters without Kerberos). Default (empty): read by
  // WebHdfsOptionsFromEnvironment() from $HADOOP_USER_NAME, else $USER; still empty: not
  // sent, and the NameNode uses its static web user.
  std::string user;
  // A read larger than this is fetched as parallel OPENs of this many bytes each (AWS
  // recommends 8-16 MiB ranges for S3; the same trade of requests against parallelism holds
  // for datanodes). Default: 8 MiB.
  uint64_t read_part_bytes = uint64_t{8} << 20;
  // Bytes a writer buffers before sending them (the first buffer with CREATE, later ones
  // with APPEND, one request in flight while the next buffer fills). Default: 16 MiB.
  size_t write_buffer_bytes = size_t{16} << 20;
  // Deadline of one request over all its attempts. Default: zero = the engine's.
  std::chrono::milliseconds request_timeout{0};
  // When a failed request is sent again. The file system adds WebHDFS's error decoding
  // (the RemoteException class is the error code) and its retryable exceptions
  // (RetriableException, StandbyException) to these. Default: RetryPolicy's defaults with
  // 10 attempts, as Hadoop's WebHDFS client (dfs.http.client.retry.max.attempts = 10): an
  // OPEN is two requests (namenode, then datanode), either of which can fail.
  RetryPolicy::Options retry = [] {
    RetryPolicy::Options o;
    o.max_attempts = 10;
    return o;
  }();
  // Default: null = DefaultHttpEngine(), the process-wide engine.
  HttpEngine* engine = nullptr;
};

// Options with `user` filled from the environment as described above.
WebHdfsOptions WebHdfsOptionsFromEnvironment();

// Threading: all methods are safe to call concurrently (FileSystem's contract).
class WebHdfsFileSystem final : public FileSystem {
 public:
  explicit WebHdfsFileSystem(WebHdfsOptions options);
  ~WebHdfsFileSystem() override;

  std::string_view name() const override { return "hdfs"; }
  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options = {}) override;
  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::vector<FileInfo>> List(const std::string& dir) override;
  Status Delete(const std::string& path) override;
  // Replaces an existing file at `to`, as rename(2) does (rename with OVERWRITE).
  Status Rename(const std::string& from, const std::string& to) override;
  Status CreateDirs(const std::string& dir) override;
  // A complete temporary file, then a rename that refuses an existing destination
  // (renameoptions=NONE): HDFS's create-without-overwrite would show readers a file under
  // construction, this never does.
  Status PutIfAbsent(const std::string& path, ByteView data) override;

  // The blocks of `path` overlapping [offset, offset + length), in file order, each with the
  // datanodes holding it. An empty file has none.
  Result<std::vector<BlockLocation>> GetBlockLocations(
      const std::string& path, uint64_t offset = 0,
      uint64_t length = std::numeric_limits<uint64_t>::max());

  const WebHdfsOptions& options() const { return options_; }

  class Client;  // shared with the file objects (src/io/webhdfs_client.h)

 private:
  WebHdfsOptions options_;
  std::shared_ptr<Client> client_;
};

// The process-wide WebHDFS file system that FileSystemFor() returns for hdfs:// and
// webhdfs:// URIs (options from the environment). Never destroyed.
WebHdfsFileSystem* WebHdfsFileSystemFromEnvironment();

}  // namespace sluice::io

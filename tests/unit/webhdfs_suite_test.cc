// The shared FileSystem suite (file_system_suite.h) on WebHDFS, against
// tests/tools/webhdfs_server.py: a server written from the WebHDFS REST document, since no
// Hadoop cluster is available here. One server per test process, started on first use.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "unit/file_system_suite.h"
#include "webhdfs_test_util.h"

namespace sluice::io {
namespace {

using testing::FileSystemBackend;
using testing::FileSystemCase;
using testing::FileSystemTest;

// The server and a client for every test of this process (never destroyed before exit,
// when the server's child process is stopped).
struct SharedHdfs {
  std::unique_ptr<sluice::testing::WebHdfsServers> servers;
  std::unique_ptr<sluice::testing::WebHdfsClient> client;

  static SharedHdfs* Get() {
    static SharedHdfs shared;
    static std::once_flag started;
    std::call_once(started, [] {
      shared.servers = sluice::testing::WebHdfsServers::Start(/*with_proxy=*/false);
      if (shared.servers != nullptr) {
        shared.client = std::make_unique<sluice::testing::WebHdfsClient>();
      }
    });
    return shared.servers != nullptr ? &shared : nullptr;
  }
};

class HdfsBackend final : public FileSystemBackend {
 public:
  explicit HdfsBackend(SharedHdfs* shared) : shared_(shared) {
    static std::atomic<int> counter{0};
    root_ = shared_->servers->Root() + "/suite-" + std::to_string(counter.fetch_add(1));
    Status made = fs()->CreateDirs(root_);
    EXPECT_TRUE(made.ok()) << made.ToString();
  }
  FileSystem* fs() override { return shared_->client->fs.get(); }
  const std::string& root() const override { return root_; }

 private:
  SharedHdfs* shared_;
  std::string root_;
};

std::vector<FileSystemCase> HdfsCases() {
  // Nothing starts here: cases are listed at registration (also by ctest's discovery).
  auto make = []() -> std::unique_ptr<FileSystemBackend> {
    SharedHdfs* shared = SharedHdfs::Get();
    if (shared == nullptr) return nullptr;
    return std::make_unique<HdfsBackend>(shared);
  };
  return {{"hdfs", {}, make, ""}};
}

INSTANTIATE_TEST_SUITE_P(WebHdfs, FileSystemTest, ::testing::ValuesIn(HdfsCases()),
                         testing::CaseName);

}  // namespace
}  // namespace sluice::io

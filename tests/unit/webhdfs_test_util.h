// The WebHDFS test servers for unit tests: tests/tools/webhdfs_server.py (three datanodes
// named dn-a, dn-b, dn-c; 1 MiB blocks; user "mallory" denied writes) and, optionally, the
// fault-injecting proxy in front of its NameNode and datanodes. Started once per test suite;
// each test works under its own directory. The file system under test runs on its own HTTP
// engine with short timeouts, so fault tests end in seconds.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "child_server.h"
#include "sluice/io/http_engine.h"
#include "sluice/io/webhdfs_file_system.h"

namespace sluice::testing {

constexpr uint64_t kTestBlockSize = 1 << 20;

// A unique directory name per test.
inline std::string TestDir(const std::string& root) {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return root + "/" + info->name() + "-" + std::to_string(counter.fetch_add(1));
}

struct WebHdfsServers {
  std::unique_ptr<ChildServer> hdfs;
  std::unique_ptr<ChildServer> proxy;  // null without faults
  int namenode_port = 0;               // what the client talks to: the proxy's when there is one
  int control_port = 0;

  static std::unique_ptr<WebHdfsServers> Start(bool with_proxy) {
    auto servers = std::make_unique<WebHdfsServers>();
    auto hdfs = ChildServer::StartTool(
        "webhdfs_server.py",
        {"--datanodes", "3", "--replication", "2", "--hostnames", "dn-a,dn-b,dn-c", "--block-size",
         std::to_string(kTestBlockSize), "--deny-user", "mallory", "--lifetime", "900"});
    if (!hdfs.ok()) {
      ADD_FAILURE() << hdfs.status().ToString();
      return nullptr;
    }
    servers->hdfs = std::move(*hdfs);
    servers->namenode_port = servers->hdfs->info()["namenode"].get<int>();
    if (!with_proxy) return servers;
    std::vector<std::string> args = {"--lifetime", "900", "--upstream",
                                     "127.0.0.1:" + std::to_string(servers->namenode_port)};
    for (const auto& port : servers->hdfs->info()["datanodes"]) {
      args.insert(args.end(), {"--upstream", "127.0.0.1:" + std::to_string(port.get<int>())});
    }
    auto proxy = ChildServer::StartTool("fault_proxy.py", args);
    if (!proxy.ok()) {
      ADD_FAILURE() << proxy.status().ToString();
      return nullptr;
    }
    servers->proxy = std::move(*proxy);
    servers->namenode_port = servers->proxy->info()["ports"][0].get<int>();
    servers->control_port = servers->proxy->info()["control"].get<int>();
    return servers;
  }

  std::string Root() const { return "hdfs://127.0.0.1:" + std::to_string(namenode_port); }
};

// A test fixture whose suite shares one set of servers (with the fault proxy in front when
// `kWithProxy`); each test gets its own directory, dir_, and P(name) inside it.
template <bool kWithProxy>
class WebHdfsServersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { servers_ = WebHdfsServers::Start(kWithProxy).release(); }
  static void TearDownTestSuite() {
    delete servers_;
    servers_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(servers_, nullptr);
    dir_ = TestDir(servers_->Root());
  }
  std::string P(const std::string& name) const { return dir_ + "/" + name; }

  static inline WebHdfsServers* servers_ = nullptr;
  std::string dir_;
};

// An engine with short timeouts and a WebHDFS file system on it.
struct WebHdfsClient {
  std::unique_ptr<io::HttpEngine> engine;
  std::unique_ptr<io::WebHdfsFileSystem> fs;

  explicit WebHdfsClient(io::WebHdfsOptions options = {},
                         std::chrono::milliseconds stall = std::chrono::seconds(3)) {
    io::HttpEngineOptions engine_options;
    engine_options.stall_timeout = stall;
    engine_options.connect_timeout = std::chrono::seconds(5);
    engine_options.request_timeout = std::chrono::seconds(60);
    engine_options.max_in_flight = 16;
    engine = std::make_unique<io::HttpEngine>(engine_options);
    options.engine = engine.get();
    if (options.user.empty()) options.user = "alice";
    options.retry.base_delay = std::chrono::milliseconds(10);
    options.retry.max_delay = std::chrono::milliseconds(200);
    fs = std::make_unique<io::WebHdfsFileSystem>(std::move(options));
  }
};

inline std::string Pattern(size_t n, int seed) {
  std::string out(n, '\0');
  uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>(x);
  }
  return out;
}

}  // namespace sluice::testing

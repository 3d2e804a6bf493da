// The WebHDFS file system through the fault-injecting proxy (tests/tools/fault_proxy.py),
// which sits in front of the test server's NameNode and datanodes: 503 storms, resets and
// truncations mid-body, stalls, lost replies. Nothing corrupt is returned, nothing hangs
// (every wait here is bounded by the engine's deadlines), and a write whose reply was lost is
// neither duplicated nor reported failed when it went through.
#include <gtest/gtest.h>

#include <future>
#include <map>

#include "webhdfs_test_util.h"

namespace sluice::io {
namespace {

using sluice::testing::Pattern;
using sluice::testing::WebHdfsClient;

// Datanode requests carry the NameNode's address in their query; NameNode requests do not.
constexpr char kDatanode[] = "path=namenoderpcaddress";

class WebHdfsFaultsTest : public sluice::testing::WebHdfsServersTest</*kWithProxy=*/true> {
 protected:
  void SetUp() override {
    WebHdfsServersTest::SetUp();
    SetFaults({});
  }
  void TearDown() override { SetFaults({}); }

  // Replaces the proxy's fault rules ("kind:key=value,...") and clears its counts.
  void SetFaults(const std::vector<std::string>& rules, int seed = 1) {
    nlohmann::json list = rules;
    Control("PUT", "/faults?seed=" + std::to_string(seed), list.dump());
    Control("POST", "/reset", "");
  }
  nlohmann::json Control(const std::string& method, const std::string& target,
                         const std::string& body) {
    HttpRequest request;
    request.method = method;
    request.url = "http://127.0.0.1:" + std::to_string(servers_->control_port) + target;
    if (!body.empty()) request.body = std::make_shared<const std::string>(body);
    auto reply = control_.Call(std::move(request));
    EXPECT_TRUE(reply.ok() && reply->status == 200) << target;
    return reply.ok() ? nlohmann::json::parse(reply->body, nullptr, false) : nlohmann::json();
  }
  // How many datanode OPENs the proxy saw for each offset.
  std::map<uint64_t, int> DatanodeOpensByOffset() {
    std::map<uint64_t, int> out;
    for (const auto& entry : Control("GET", "/log", "")) {
      const std::string query = entry["query"].get<std::string>();
      if (query.find("op=OPEN") == std::string::npos ||
          query.find("namenoderpcaddress") == std::string::npos) {
        continue;
      }
      size_t at = query.find("offset=");
      out[std::stoull(query.substr(at + 7))]++;
    }
    return out;
  }

  HttpEngine control_;
};

Result<std::string> ReadAllOf(FileSystem* fs, const std::string& path) { return fs->ReadAll(path); }

TEST_F(WebHdfsFaultsTest, ReadsSurviveStormsResetsAndTruncationsUncorrupted) {
  WebHdfsOptions options;
  options.read_part_bytes = 64 << 10;
  // An attempt fails here with p ~ 0.42 (0.1 status, 0.2 reset, 0.2 truncation): with the
  // default 6 attempts one of the 16 parts would exhaust them in ~9% of runs (a flaky test,
  // seen in CI); 16 attempts make that ~1e-5.
  options.retry.max_attempts = 16;
  WebHdfsClient client(options);
  const std::string data = Pattern(1 << 20, 4);
  ASSERT_TRUE(client.fs->WriteAll(P("d.bin"), data).ok());
  SetFaults({"status:first=4", std::string("reset:p=0.2,") + kDatanode,
             std::string("truncate:p=0.2,") + kDatanode, "status:p=0.1,body=remote"},
            /*seed=*/7);
  auto back = ReadAllOf(client.fs.get(), P("d.bin"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == data);
  auto counts = Control("GET", "/counts", "");
  EXPECT_GT(counts["faults"].value("reset", 0) + counts["faults"].value("truncate", 0), 0);
  EXPECT_GE(counts["faults"].value("status", 0), 4);
}

TEST_F(WebHdfsFaultsTest, PersistentErrorFailsNamingUriStatusAndAttempts) {
  WebHdfsClient client;
  ASSERT_TRUE(client.fs->WriteAll(P("e.bin"), "0123456789").ok());
  auto f = client.fs->OpenForRead(P("e.bin"));
  ASSERT_TRUE(f.ok());
  SetFaults({"status:path=op=OPEN,body=remote,exception=StandbyException"});
  char buf[10];
  auto r = (*f)->Read(0, 10, buf);
  ASSERT_FALSE(r.ok());
  const std::string m = r.status().message();
  EXPECT_NE(m.find(P("e.bin")), std::string::npos) << m;
  EXPECT_NE(m.find("503"), std::string::npos) << m;
  EXPECT_NE(m.find("StandbyException"), std::string::npos) << m;
  EXPECT_NE(m.find("attempts"), std::string::npos) << m;
  EXPECT_GE(Control("GET", "/counts", "")["total"].get<int>(), 2);  // it was retried
}

TEST_F(WebHdfsFaultsTest, StalledDatanodeIsAbandonedAfterTheStallTimeout) {
  WebHdfsClient client({}, /*stall=*/std::chrono::seconds(1));
  const std::string data = Pattern(300000, 5);
  ASSERT_TRUE(client.fs->WriteAll(P("s.bin"), data).ok());
  SetFaults({std::string("stall:first=1,ms=600000,at=0.3,") + kDatanode});
  auto back = ReadAllOf(client.fs.get(), P("s.bin"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == data);
}

TEST_F(WebHdfsFaultsTest, ReadFailsWithinItsDeadlineWhenNoReplyComes) {
  WebHdfsOptions options;
  options.request_timeout = std::chrono::seconds(2);
  WebHdfsClient client(options, /*stall=*/std::chrono::seconds(30));
  ASSERT_TRUE(client.fs->WriteAll(P("slow.bin"), "abc").ok());
  auto f = client.fs->OpenForRead(P("slow.bin"));
  ASSERT_TRUE(f.ok());
  SetFaults({"delay:ms=600000,path=op=OPEN"});
  char buf[3];
  auto r = (*f)->Read(0, 3, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(P("slow.bin")), std::string::npos) << r.status().ToString();
}

TEST_F(WebHdfsFaultsTest, CancelCompletesReadsInFlight) {
  WebHdfsClient client;
  ASSERT_TRUE(client.fs->WriteAll(P("c.bin"), Pattern(100000, 6)).ok());
  auto f = client.fs->OpenForRead(P("c.bin"));
  ASSERT_TRUE(f.ok());
  SetFaults({"delay:ms=600000,path=op=OPEN"});
  auto token = std::make_shared<CancelToken>();
  IoContext context;
  context.cancel = token;
  std::vector<std::promise<Result<std::string>>> results(8);
  for (size_t i = 0; i < results.size(); ++i) {
    (*f)->ReadAsync(
        i * 1000, 1000,
        [&results, i](Result<std::string> r) { results[i].set_value(std::move(r)); }, context);
  }
  token->Cancel();
  for (auto& result : results) {
    auto future = result.get_future();
    ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_EQ(future.get().status().code(), StatusCode::kCancelled);
  }
}

TEST_F(WebHdfsFaultsTest, OneDatanodeFetchPerChunk) {
  WebHdfsOptions options;
  options.read_part_bytes = 1 << 20;
  WebHdfsClient client(options);
  ASSERT_TRUE(client.fs->WriteAll(P("chunks.bin"), Pattern(400000, 8)).ok());
  auto f = client.fs->OpenForRead(P("chunks.bin"));
  ASSERT_TRUE(f.ok());
  SetFaults({});
  std::vector<std::promise<Result<std::string>>> results(4);
  for (size_t i = 0; i < results.size(); ++i) {
    (*f)->ReadAsync(i * 100000, 100000,
                    [&results, i](Result<std::string> r) { results[i].set_value(std::move(r)); });
  }
  for (auto& result : results) ASSERT_TRUE(result.get_future().get().ok());
  EXPECT_EQ(DatanodeOpensByOffset(),
            (std::map<uint64_t, int>{{0, 1}, {100000, 1}, {200000, 1}, {300000, 1}}));
}

TEST_F(WebHdfsFaultsTest, LostAppendReplyIsNeitherDuplicatedNorFatal) {
  WebHdfsOptions options;
  options.write_buffer_bytes = 100000;
  WebHdfsClient client(options);
  // Every datanode APPEND's reply is lost once: the bytes land, the client sees a reset.
  SetFaults({std::string("reset:first=2,method=POST,") + kDatanode});
  const std::string data = Pattern(350000, 9);
  auto w = client.fs->OpenForWrite(P("w.bin"));
  ASSERT_TRUE(w.ok());
  for (size_t i = 0; i < data.size(); i += 50000) {
    Status appended = (*w)->Append(ByteView(data).substr(i, 50000));
    ASSERT_TRUE(appended.ok()) << appended.ToString();
  }
  Status closed = (*w)->Close();
  ASSERT_TRUE(closed.ok()) << closed.ToString();
  EXPECT_EQ(Control("GET", "/counts", "")["faults"].value("reset", 0), 2);
  SetFaults({});
  auto back = ReadAllOf(client.fs.get(), P("w.bin"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->size(), data.size());
  EXPECT_TRUE(*back == data);
}

TEST_F(WebHdfsFaultsTest, LostRenameReplyStillCommitsOnce) {
  WebHdfsClient client;
  SetFaults({"reset:first=1,path=op=RENAME"});
  Status closed = client.fs->WriteAll(P("closed.bin"), "payload");
  ASSERT_TRUE(closed.ok()) << closed.ToString();
  SetFaults({"reset:first=1,path=op=RENAME"});
  Status won = client.fs->PutIfAbsent(P("commit.json"), "mine");
  EXPECT_TRUE(won.ok()) << won.ToString();  // its own lost rename is not "already exists"
  SetFaults({});
  EXPECT_EQ(*client.fs->ReadAll(P("closed.bin")), "payload");
  EXPECT_EQ(*client.fs->ReadAll(P("commit.json")), "mine");
  EXPECT_EQ(client.fs->PutIfAbsent(P("commit.json"), "theirs").code(), StatusCode::kAlreadyExists);
  auto listing = client.fs->List(dir_);
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->size(), 2u);  // no temporaries
}

}  // namespace
}  // namespace sluice::io

// The WebHDFS file system against tests/tools/webhdfs_server.py (a server written from the
// REST specification; no Hadoop cluster is available here): writes in buffers (CREATE then
// APPENDs) read back equal in parallel parts, block locations, the put-if-absent race, and
// errors that name the URI, the HTTP status and the RemoteException.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "dist/map_phase.h"
#include "sluice/dist/jobs.h"
#include "webhdfs_test_util.h"

namespace sluice::io {
namespace {

using sluice::testing::kTestBlockSize;
using sluice::testing::Pattern;
using sluice::testing::WebHdfsClient;

using WebHdfsFileSystemTest = sluice::testing::WebHdfsServersTest</*kWithProxy=*/false>;

TEST_F(WebHdfsFileSystemTest, WrittenInBuffersReadBackInParallelParts) {
  WebHdfsOptions options;
  options.write_buffer_bytes = 300 << 10;  // CREATE + several APPENDs
  options.read_part_bytes = 200 << 10;
  WebHdfsClient client(options);
  const std::string data = Pattern((1 << 20) + 12345, 1);
  auto w = client.fs->OpenForWrite(P("big.bin"));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (size_t i = 0; i < data.size(); i += 70000) {
    ASSERT_TRUE((*w)->Append(ByteView(data).substr(i, 70000)).ok());
  }
  EXPECT_FALSE(client.fs->Exists(P("big.bin")));  // only the temporary so far
  ASSERT_TRUE((*w)->Close().ok());
  auto f = client.fs->OpenForRead(P("big.bin"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->size(), data.size());
  std::string back(data.size(), '\0');
  auto got = (*f)->Read(0, data.size(), back.data());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == data);
  auto listing = client.fs->List(dir_);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 1u);  // the temporary is gone
  EXPECT_EQ((*listing)[0].path, P("big.bin"));
}

TEST_F(WebHdfsFileSystemTest, ManyAsyncReadsInFlightEachGetTheirRange) {
  WebHdfsClient client;
  const std::string data = Pattern(600000, 2);
  ASSERT_TRUE(client.fs->WriteAll(P("r.bin"), data).ok());
  auto f = client.fs->OpenForRead(P("r.bin"));
  ASSERT_TRUE(f.ok());
  std::vector<std::promise<Result<std::string>>> results(40);
  for (size_t i = 0; i < results.size(); ++i) {
    (*f)->ReadAsync(i * 15000, 20000,
                    [&results, i](Result<std::string> r) { results[i].set_value(std::move(r)); });
  }
  for (size_t i = 0; i < results.size(); ++i) {
    Result<std::string> r = results[i].get_future().get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, data.substr(i * 15000, 20000)) << i;
  }
}

TEST_F(WebHdfsFileSystemTest, BlockLocationsNameTheDatanodeHosts) {
  WebHdfsClient client;
  ASSERT_TRUE(client.fs->WriteAll(P("blocks.bin"), Pattern(2 * kTestBlockSize + 5, 3)).ok());
  auto blocks = client.fs->GetBlockLocations(P("blocks.bin"));
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  ASSERT_EQ(blocks->size(), 3u);
  for (size_t i = 0; i < blocks->size(); ++i) {
    const BlockLocation& b = (*blocks)[i];
    EXPECT_EQ(b.offset, i * kTestBlockSize);
    EXPECT_EQ(b.hosts.size(), 2u);  // replication 2
    for (const auto& host : b.hosts)
      EXPECT_TRUE(host == "dn-a" || host == "dn-b" || host == "dn-c");
    EXPECT_EQ(b.names.size(), 2u);
  }
  EXPECT_EQ((*blocks)[2].length, 5u);
  auto middle = client.fs->GetBlockLocations(P("blocks.bin"), kTestBlockSize + 1, 10);
  ASSERT_TRUE(middle.ok());
  ASSERT_EQ(middle->size(), 1u);
  EXPECT_EQ((*middle)[0].offset, kTestBlockSize);
}

TEST_F(WebHdfsFileSystemTest, OlderNamenodeBlockLocationsComeFromGetBlockLocations) {
  auto old = sluice::testing::ChildServer::StartTool(
      "webhdfs_server.py",
      {"--datanodes", "2", "--replication", "1", "--hostnames", "x,y", "--block-size", "100",
       "--legacy-block-locations", "--lifetime", "300"});
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  const std::string file =
      "hdfs://127.0.0.1:" + std::to_string((*old)->info()["namenode"].get<int>()) + "/f";
  WebHdfsClient client;
  ASSERT_TRUE(client.fs->WriteAll(file, Pattern(250, 4)).ok());
  for (int call = 0; call < 2; ++call) {  // the second goes straight to the old operation
    auto blocks = client.fs->GetBlockLocations(file);
    ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
    ASSERT_EQ(blocks->size(), 3u);
    EXPECT_EQ((*blocks)[2].offset, 200u);
    EXPECT_EQ((*blocks)[2].length, 50u);
    ASSERT_EQ((*blocks)[1].hosts.size(), 1u);
    EXPECT_TRUE((*blocks)[1].hosts[0] == "x" || (*blocks)[1].hosts[0] == "y");
  }
}

TEST_F(WebHdfsFileSystemTest, FileBlockLocationsOfALocalFileIsOneBlockWithoutHosts) {
  char tmpl[] = "/tmp/sluice_blocks_XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "12345", 5), 5);
  ::close(fd);
  auto blocks = FileBlockLocations(tmpl);
  ::unlink(tmpl);
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  ASSERT_EQ(blocks->size(), 1u);
  EXPECT_EQ((*blocks)[0].length, 5u);
  EXPECT_TRUE((*blocks)[0].hosts.empty());
}

TEST_F(WebHdfsFileSystemTest, DistributedTasksPreferTheHostsHoldingTheirShards) {
  // The dist scheduler's locality hook: a task per shard, its preferred nodes the datanodes
  // holding most of the shard's bytes (through FileSystemFor(hdfs://...), as jobs open it).
  WebHdfsClient client;
  ASSERT_TRUE(client.fs->WriteAll(P("a.tfrecord"), Pattern(2 * kTestBlockSize + 7, 11)).ok());
  ASSERT_TRUE(client.fs->WriteAll(P("b.tfrecord"), Pattern(100, 12)).ok());
  auto tasks = dist::ShardTasks(dir_ + "/*.tfrecord");
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->size(), 2u);
  for (const dist::TaskSpec& task : *tasks) {
    auto blocks = client.fs->GetBlockLocations(task.input);
    ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
    EXPECT_FALSE(task.hosts.empty()) << task.input;
    EXPECT_EQ(task.hosts, dist::PreferredHosts(*blocks)) << task.input;
    for (const auto& host : task.hosts) {
      EXPECT_TRUE(host == "dn-a" || host == "dn-b" || host == "dn-c") << host;
    }
  }
  EXPECT_EQ((*tasks)[1].hosts.size(), 2u);  // one block, replication 2
}

TEST_F(WebHdfsFileSystemTest, PutIfAbsentSixteenWritersOneWinner) {
  WebHdfsClient client;
  for (int round = 0; round < 3; ++round) {
    const std::string path = P("commit-" + std::to_string(round) + ".json");
    std::atomic<int> winners{0}, losers{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        Status s = client.fs->PutIfAbsent(path, "writer " + std::to_string(t));
        if (s.ok()) winners++;
        if (s.code() == StatusCode::kAlreadyExists) losers++;
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(losers.load(), 15);
    auto content = client.fs->ReadAll(path);
    ASSERT_TRUE(content.ok());
    EXPECT_EQ(content->rfind("writer ", 0), 0u);
  }
  auto listing = client.fs->List(dir_);
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->size(), 3u);  // no temporaries left by the losers
}

TEST_F(WebHdfsFileSystemTest, ErrorsNameTheUriStatusAndException) {
  WebHdfsClient client;
  auto missing = client.fs->Stat(P("missing"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  for (const char* part : {"GETFILESTATUS", "/missing", "HTTP 404", "FileNotFoundException"}) {
    EXPECT_NE(missing.status().message().find(part), std::string::npos)
        << part << " in " << missing.status().message();
  }
  WebHdfsOptions denied;
  denied.user = "mallory";
  WebHdfsClient mallory(denied);
  Status s = mallory.fs->CreateDirs(P("nope"));
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("HTTP 403 AccessControlException: Permission denied: user=mallory"),
            std::string::npos)
      << s.message();
  Status w = mallory.fs->WriteAll(P("nope.bin"), "x");
  EXPECT_FALSE(w.ok());
  EXPECT_FALSE(client.fs->Exists(P("nope.bin")));
  ASSERT_TRUE(client.fs->WriteAll(P("file"), "abc").ok());
  EXPECT_EQ(client.fs->List(P("file")).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(client.fs->OpenForRead(dir_).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(client.fs->Delete(P("missing")).code(), StatusCode::kNotFound);
  EXPECT_EQ(client.fs->Rename(P("file"), "hdfs://other:9870/x").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(client.fs->Stat("hdfs://127.0.0.1:1/x/../y").status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(WebHdfsFileSystemTest, RenameReplacesAFileAndWriteReplacesOnClose) {
  WebHdfsClient client;
  ASSERT_TRUE(client.fs->WriteAll(P("a"), "old").ok());
  ASSERT_TRUE(client.fs->WriteAll(P("b"), "new").ok());
  ASSERT_TRUE(client.fs->Rename(P("b"), P("a")).ok());
  EXPECT_EQ(*client.fs->ReadAll(P("a")), "new");
  ASSERT_TRUE(client.fs->WriteAll(P("a"), "newer").ok());
  EXPECT_EQ(*client.fs->ReadAll(P("a")), "newer");
  EXPECT_FALSE(client.fs->Exists(P("b")));
}

TEST_F(WebHdfsFileSystemTest, UnreachableNamenodeIsAnErrorNamingTheUri) {
  WebHdfsClient client;
  auto r = client.fs->Stat("hdfs://127.0.0.1:1/data/x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hdfs://127.0.0.1:1/data/x"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace sluice::io

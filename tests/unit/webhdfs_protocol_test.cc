// The pure parts of the WebHDFS client: JSON replies (shapes from hadoop-hdfs WebHDFS.md),
// hdfs:// URIs and REST URLs, and error replies -> Status.
#include <gtest/gtest.h>

#include "io/url.h"
#include "io/webhdfs_errors.h"
#include "io/webhdfs_json.h"
#include "io/webhdfs_url.h"

namespace sluice::io::webhdfs {
namespace {

// The LISTSTATUS example of the REST document.
constexpr char kListing[] = R"({
  "FileStatuses": {"FileStatus": [
    {"accessTime": 1320171722771, "blockSize": 33554432, "childrenNum": 0, "fileId": 16388,
     "group": "supergroup", "length": 24930, "modificationTime": 1320171722771,
     "owner": "webuser", "pathSuffix": "a.patch", "permission": "644", "replication": 1,
     "storagePolicy": 0, "type": "FILE"},
    {"accessTime": 0, "blockSize": 0, "childrenNum": 0, "fileId": 16389, "group": "supergroup",
     "length": 0, "modificationTime": 1320895981256, "owner": "username", "pathSuffix": "bar",
     "permission": "711", "replication": 0, "snapshotEnabled": true, "type": "DIRECTORY"}
  ]}})";

TEST(WebHdfsJson, ListingOfTheSpecExample) {
  auto entries = ParseFileStatuses(kListing);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].path_suffix, "a.patch");
  EXPECT_EQ((*entries)[0].length, 24930u);
  EXPECT_FALSE((*entries)[0].is_directory);
  EXPECT_EQ((*entries)[0].block_size, 33554432u);
  EXPECT_TRUE((*entries)[1].is_directory);
  EXPECT_EQ((*entries)[1].modification_time_ms, 1320895981256u);
}

TEST(WebHdfsJson, FileStatusBooleanLocation) {
  auto status = ParseFileStatus(
      R"({"FileStatus": {"length": 5, "pathSuffix": "", "type": "FILE", "extra": [1, 2]}})");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->length, 5u);
  EXPECT_EQ(*ParseBoolean(R"({"boolean": false})"), false);
  EXPECT_EQ(*ParseBoolean(R"({"boolean": true})"), true);
  EXPECT_EQ(*ParseLocation(R"({"Location": "http://dn:9864/webhdfs/v1/a?op=OPEN"})"),
            "http://dn:9864/webhdfs/v1/a?op=OPEN");
}

TEST(WebHdfsJson, BlockLocationsOfTheSpecExample) {
  auto blocks = ParseBlockLocations(R"({"BlockLocations": {"BlockLocation": [
    {"cachedHosts": [], "corrupt": false, "hosts": ["host"], "length": 134217728,
     "names": ["host:ip"], "offset": 0, "storageTypes": ["DISK"],
     "topologyPaths": ["/default-rack/hostname:ip"]},
    {"cachedHosts": [], "corrupt": true, "hosts": ["h1", "h2"], "length": 62599364,
     "names": ["a:1", "b:2"], "offset": 134217728, "storageTypes": ["DISK", "SSD"],
     "topologyPaths": []}]}})");
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  ASSERT_EQ(blocks->size(), 2u);
  EXPECT_EQ((*blocks)[0].hosts, std::vector<std::string>{"host"});
  EXPECT_EQ((*blocks)[1].offset, 134217728u);
  EXPECT_EQ((*blocks)[1].names, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_TRUE((*blocks)[1].corrupt);
}

TEST(WebHdfsJson, LocatedBlocksOfOlderNamenodes) {
  auto blocks = ParseLocatedBlocks(R"({"LocatedBlocks": {"fileLength": 150,
    "isUnderConstruction": false, "locatedBlocks": [
      {"block": {"blockId": 1073741825, "blockPoolId": "BP-1", "generationStamp": 1001,
                 "numBytes": 100}, "blockToken": {"urlString": "AAAA"}, "cachedLocations": [],
       "isCorrupt": false, "startOffset": 0,
       "locations": [{"hostName": "dn1", "ipAddr": "10.0.0.1", "xferPort": 9866},
                     {"hostName": "dn2", "ipAddr": "10.0.0.2", "xferPort": 9866}]},
      {"block": {"numBytes": 50}, "isCorrupt": true, "startOffset": 100, "locations": []}]}})");
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  ASSERT_EQ(blocks->size(), 2u);
  EXPECT_EQ((*blocks)[0].hosts, (std::vector<std::string>{"dn1", "dn2"}));
  EXPECT_EQ((*blocks)[0].names, (std::vector<std::string>{"10.0.0.1:9866", "10.0.0.2:9866"}));
  EXPECT_EQ((*blocks)[1].offset, 100u);
  EXPECT_EQ((*blocks)[1].length, 50u);
  EXPECT_TRUE((*blocks)[1].corrupt);
  EXPECT_FALSE(
      ParseLocatedBlocks(R"({"LocatedBlocks": {"locatedBlocks": [{"startOffset": 0}]}})").ok());
}

TEST(WebHdfsJson, WrongShapesAreErrorsNotGuesses) {
  for (const char* body :
       {"", "not json", "[1]", "{}", R"({"FileStatus": 3})", R"({"FileStatus": {"type": "FILE"}})",
        R"({"FileStatus": {"type": "FILE", "length": -1}})",
        R"({"FileStatus": {"type": "FILE", "length": "12"}})",
        R"({"FileStatus": {"type": "PIPE", "length": 1}})",
        R"({"FileStatus": {"type": "FILE", "length": 1.5}})"}) {
    auto status = ParseFileStatus(body);
    ASSERT_FALSE(status.ok()) << body;
    EXPECT_EQ(status.status().code(), StatusCode::kIoError);
    EXPECT_NE(status.status().message().find("malformed WebHDFS reply"), std::string::npos);
  }
  EXPECT_FALSE(ParseFileStatuses(R"({"FileStatuses": {"FileStatus": {}}})").ok());
  EXPECT_FALSE(ParseBoolean(R"({"boolean": "true"})").ok());
  EXPECT_FALSE(ParseBlockLocations(R"({"BlockLocations": {"BlockLocation": [{"offset": 0,
    "length": 1, "hosts": [7]}]}})")
                   .ok());
  EXPECT_FALSE(ParseLocation(R"({"Location": ""})").ok());
}

TEST(WebHdfsJson, RemoteException) {
  auto remote = ParseRemoteException(R"({"RemoteException": {"exception":
    "FileNotFoundException", "javaClassName": "java.io.FileNotFoundException",
    "message": "File does not exist: /foo/a.patch"}})");
  ASSERT_TRUE(remote.has_value());
  EXPECT_EQ(remote->exception, "FileNotFoundException");
  EXPECT_EQ(remote->message, "File does not exist: /foo/a.patch");
  remote = ParseRemoteException(
      R"({"RemoteException": {"javaClassName": "org.apache.hadoop.ipc.StandbyException"}})");
  ASSERT_TRUE(remote.has_value());
  EXPECT_EQ(remote->exception, "StandbyException");
  EXPECT_FALSE(ParseRemoteException("<html>502 Bad Gateway</html>").has_value());
  EXPECT_FALSE(ParseRemoteException(R"({"RemoteException": {}})").has_value());
}

TEST(WebHdfsUri, ParsesAndNormalises) {
  auto uri = ParseHdfsUri("hdfs://nn.example.com:9870//data///train/");
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(uri->host, "nn.example.com");
  EXPECT_EQ(uri->port, 9870);
  EXPECT_EQ(uri->path, "/data/train");
  EXPECT_EQ(uri->ToString(), "hdfs://nn.example.com:9870/data/train");
  uri = ParseHdfsUri("webhdfs://[::1]:50070");
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(uri->host, "[::1]");
  EXPECT_EQ(uri->port, 50070);
  EXPECT_EQ(uri->path, "/");
  uri = ParseHdfsUri("hdfs://namenode/x");
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(uri->port, kDefaultHttpPort);
}

TEST(WebHdfsUri, BadUrisAreInvalidArgumentNamingTheUri) {
  for (const char* bad : {"hdfs:///x", "hdfs://:9870/x", "hdfs://nn:0/x", "hdfs://nn:99999/x",
                          "hdfs://nn:12ab/x", "hdfs://user@nn:9870/x", "hdfs://nn:9870/a/../b",
                          "hdfs://nn:9870/./b", "s3://bucket/x", "/local/path", "hdfs://[::1/x"}) {
    auto uri = ParseHdfsUri(bad);
    ASSERT_FALSE(uri.ok()) << bad;
    EXPECT_EQ(uri.status().code(), StatusCode::kInvalidArgument);
    // Named as written, except user info, which is never printed (it may hold a secret).
    EXPECT_NE(uri.status().message().find(RedactUrl(bad)), std::string::npos);
  }
  EXPECT_EQ(ParseHdfsUri("hdfs://user:secret@nn:9870/x").status().message().find("secret"),
            std::string::npos);
}

TEST(WebHdfsUri, RestUrlEncodesPathAndValues) {
  auto uri = ParseHdfsUri("hdfs://nn:9870/data/a b%/ü?.json");
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(RestUrl(*uri, "OPEN", "al ice", {{"offset", "10"}, {"destination", "/x y"}}),
            "http://nn:9870/webhdfs/v1/data/a%20b%25/%C3%BC%3F.json?op=OPEN&user.name=al%20ice"
            "&offset=10&destination=%2Fx%20y");
  EXPECT_EQ(RestUrl(*uri, "GETFILESTATUS", ""),
            "http://nn:9870/webhdfs/v1/data/a%20b%25/%C3%BC%3F.json?op=GETFILESTATUS");
}

TEST(WebHdfsErrors, StatusFollowsTheExceptionClassAndNamesEverything) {
  Status s = ReplyError("OPEN", "hdfs://nn:9870/foo/a.patch", 404,
                        R"({"RemoteException": {"exception": "FileNotFoundException",
                        "javaClassName": "java.io.FileNotFoundException",
                        "message": "File does not exist: /foo/a.patch"}})");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "WebHDFS OPEN hdfs://nn:9870/foo/a.patch: HTTP 404 FileNotFoundException: File does "
            "not exist: /foo/a.patch");
  s = ReplyError("CREATE", "hdfs://nn:9870/x", 403,
                 R"({"RemoteException": {"exception": "FileAlreadyExistsException",
                 "message": "/x for client 127.0.0.1 already exists"}})");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  s = ReplyError("MKDIRS", "hdfs://nn:9870/x", 403,
                 R"({"RemoteException": {"exception": "AccessControlException",
                 "message": "Permission denied: user=bob, access=WRITE"}})");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("AccessControlException: Permission denied"), std::string::npos);
  s = ReplyError("DELETE", "hdfs://nn:9870/d", 403,
                 R"({"RemoteException": {"exception": "PathIsNotEmptyDirectoryException"}})");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
}

TEST(WebHdfsErrors, NonJsonBodiesAreSummarisedAndCodedByStatus) {
  std::string page = "<html>" + std::string(1000, 'x') + "\n</html>";
  Status s = ReplyError("GETFILESTATUS", "hdfs://nn:9870/a", 502, page);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_LT(s.message().size(), 300u);
  EXPECT_NE(s.message().find("HTTP 502 (<html>xxx"), std::string::npos);
  EXPECT_EQ(ReplyError("OPEN", "u", 404, "").code(), StatusCode::kNotFound);
  EXPECT_EQ(ReplyError("OPEN", "u", 400, "bad").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorCode(403, R"({"RemoteException": {"exception": "StandbyException"}})"),
            "StandbyException");
  EXPECT_EQ(ErrorCode(503, "busy"), "");
}

}  // namespace
}  // namespace sluice::io::webhdfs

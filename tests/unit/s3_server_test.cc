// S3 behaviour against a real server (Ceph RGW started by ctest's fixture): pagination,
// multipart aborts, put-if-absent races, the errors users meet (wrong secret, unknown key,
// missing bucket or object, no credentials), addressing styles and anonymous access.
#include <gtest/gtest.h>

#include <atomic>

#include <future>
#include <thread>

#include "io/s3_client.h"
#include "sluice/base/random.h"
#include "io/s3_xml.h"
#include "sluice/io/s3_file_system.h"
#include "unit/s3_test_server.h"

namespace sluice::io {
namespace {

constexpr char kBucket[] = "sluice-server-test";

class S3ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto o = testing::TestServerOptions();
    if (!o.has_value()) GTEST_SKIP() << testing::kNoServer;
    options_ = *o;
    options_.part_size = 5u << 20;
    ASSERT_TRUE(testing::CreateBucket(options_, kBucket).ok());
    fs_ = std::move(NewS3FileSystem(options_)).value();
    root_ = std::string("s3://") + kBucket + "/" + testing::UniquePrefix("t");
  }
  std::string P(const std::string& name) const { return root_ + "/" + name; }
  std::unique_ptr<FileSystem> FsWith(const AwsCredentials& keys) const {
    S3Options o = options_;
    o.aws.credentials = keys;
    return std::move(NewS3FileSystem(o)).value();
  }
  // Multipart uploads still open under the test's prefix.
  std::vector<std::string> OpenUploads() {
    auto client = std::move(S3Client::Make(options_)).value();
    S3Call call;
    call.path = S3Path{kBucket, ""};
    call.query = {{"uploads", ""},
                  {"prefix", root_.substr(std::string("s3://").size() + sizeof(kBucket))}};
    auto r = client->Run(call);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> keys;
    if (!r.ok()) return keys;
    size_t at = 0;
    while ((at = r->body.find("<Key>", at)) != std::string::npos) {
      size_t end = r->body.find("</Key>", at);
      keys.push_back(r->body.substr(at + 5, end - at - 5));
      at = end;
    }
    return keys;
  }

  S3Options options_;
  std::unique_ptr<FileSystem> fs_;
  std::string root_;
};

TEST_F(S3ServerTest, ListingPaginatesPastAThousandKeys) {
  constexpr int kKeys = 1100;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kKeys; i += 16) {
        char name[32];
        std::snprintf(name, sizeof(name), "k%05d", i);
        if (!fs_->WriteAll(P(std::string("many/") + name), "x").ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_TRUE(fs_->WriteAll(P("many/sub/inner"), "y").ok());
  auto list = fs_->List(P("many"));
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), static_cast<size_t>(kKeys) + 1);
  EXPECT_EQ((*list)[0].path, P("many/k00000"));
  EXPECT_EQ((*list)[kKeys - 1].path, P("many/k01099"));
  EXPECT_EQ((*list)[kKeys].path, P("many/sub"));
  EXPECT_TRUE((*list)[kKeys].is_directory);
  auto glob = fs_->Glob(P("many/k0109*"));
  ASSERT_TRUE(glob.ok());
  EXPECT_EQ(glob->size(), 10u);
}

TEST_F(S3ServerTest, AbortMidwayLeavesNoObjectAndNoUpload) {
  auto w = fs_->OpenForWrite(P("big.bin"));
  ASSERT_TRUE(w.ok());
  const std::string mib(1u << 20, 'm');
  for (int i = 0; i < 12; ++i) ASSERT_TRUE((*w)->Append(mib).ok());  // two parts sent
  EXPECT_EQ(OpenUploads().size(), 1u);
  (*w)->Abort();
  EXPECT_EQ(fs_->Stat(P("big.bin")).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(OpenUploads().empty());
  EXPECT_FALSE((*w)->Close().ok());  // an aborted file never becomes an object
  EXPECT_FALSE(fs_->Exists(P("big.bin")));
}

TEST_F(S3ServerTest, DestroyedWriterLeavesNoObjectAndNoUpload) {
  {
    auto w = fs_->OpenForWrite(P("big.bin"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(std::string(11u << 20, 'd')).ok());
  }
  EXPECT_FALSE(fs_->Exists(P("big.bin")));
  EXPECT_TRUE(OpenUploads().empty());
}

TEST_F(S3ServerTest, MultipartObjectAppearsWholeOnClose) {
  auto w = fs_->OpenForWrite(P("whole.bin"));
  ASSERT_TRUE(w.ok());
  std::string payload;
  for (int i = 0; i < (16 << 20) / 7; ++i) payload += "0123456";
  ASSERT_TRUE((*w)->Append(payload).ok());
  EXPECT_FALSE(fs_->Exists(P("whole.bin")));
  ASSERT_TRUE((*w)->Close().ok());
  auto back = fs_->ReadAll(P("whole.bin"));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == payload);
  EXPECT_TRUE(OpenUploads().empty());
}

TEST_F(S3ServerTest, PutIfAbsentRaceOfSixteenWritersHasOneWinner) {
  for (int round = 0; round < 10; ++round) {
    const std::string path = P("log/" + std::to_string(round) + ".json");
    std::vector<std::thread> threads;
    std::atomic<int> winners{0}, losers{0};
    std::mutex mu;
    std::string winner_text;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        const std::string text = "writer " + std::to_string(t);
        Status s = fs_->PutIfAbsent(path, text);
        if (s.ok()) {
          ++winners;
          std::lock_guard<std::mutex> lock(mu);
          winner_text = text;
        } else if (s.code() == StatusCode::kAlreadyExists) {
          ++losers;
        } else {
          ADD_FAILURE() << s.ToString();
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(losers.load(), 15);
    EXPECT_EQ(*fs_->ReadAll(path), winner_text);
  }
}

TEST_F(S3ServerTest, WrongSecretIsSignatureDoesNotMatchWithoutTheSecret) {
  ASSERT_TRUE(fs_->WriteAll(P("a"), "x").ok());
  AwsCredentials keys = *options_.aws.credentials;
  keys.secret_access_key = "wrong-secret-0123456789abcdefWRONG";
  auto bad = FsWith(keys);
  auto r = bad->OpenForRead(P("a"));  // HEAD: no body; the error code comes from a GET
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("HTTP 403 SignatureDoesNotMatch"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find(P("a")), std::string::npos);
  Status s = bad->WriteAll(P("b"), "y");  // PUT: S3's error document
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("SignatureDoesNotMatch"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(P("b")), std::string::npos);
  for (const Status& st : {r.status(), s}) {
    EXPECT_EQ(st.message().find(keys.secret_access_key), std::string::npos);
    EXPECT_EQ(st.message().find(options_.aws.credentials->secret_access_key), std::string::npos);
  }
}

TEST_F(S3ServerTest, UnknownAccessKeyIsInvalidAccessKeyId) {
  auto bad = FsWith(AwsCredentials{"AKNOSUCHKEY000000000", "some-secret-value-xyz", ""});
  Status bucket = bad->CreateDirs(root_);  // a HEAD of the bucket
  EXPECT_NE(bucket.message().find("InvalidAccessKeyId"), std::string::npos) << bucket.ToString();
  EXPECT_EQ(bucket.message().find("some-secret-value-xyz"), std::string::npos);
  Status s = bad->WriteAll(P("b"), "y");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("InvalidAccessKeyId"), std::string::npos) << s.ToString();
  EXPECT_EQ(s.message().find("some-secret-value-xyz"), std::string::npos);
}

TEST_F(S3ServerTest, MissingBucketAndObjectAreNotFound) {
  auto r = fs_->OpenForRead("s3://no-such-bucket-here/x");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  Status s = fs_->CreateDirs("s3://no-such-bucket-here/dir");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no such bucket"), std::string::npos) << s.ToString();
  s = fs_->WriteAll("s3://no-such-bucket-here/x", "x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("NoSuchBucket"), std::string::npos) << s.ToString();
  r = fs_->OpenForRead(P("missing"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(P("missing")), std::string::npos);
}

TEST_F(S3ServerTest, NoCredentialsIsAClearErrorBeforeAnyRequest) {
  S3Options o = options_;
  o.aws.credentials.reset();
  o.aws.credentials_source = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile 'default'";
  auto fs = std::move(NewS3FileSystem(o)).value();
  auto r = fs->OpenForRead(P("a"));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("no AWS credentials"), std::string::npos);
  EXPECT_NE(r.status().message().find(P("a")), std::string::npos);
}

TEST_F(S3ServerTest, ObjectOverwrittenWhileOpenIsNeverMixed) {
  ASSERT_TRUE(fs_->WriteAll(P("v"), std::string(1000, '1')).ok());
  auto f = fs_->OpenForRead(P("v"));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(fs_->WriteAll(P("v"), std::string(1000, '2')).ok());
  std::string scratch(100, '\0');
  auto r = (*f)->Read(0, 100, scratch.data());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("changed while open"), std::string::npos);
}

TEST_F(S3ServerTest, CancelledReadsAllCompleteWithCancelled) {
  ASSERT_TRUE(fs_->WriteAll(P("c"), std::string(1u << 20, 'c')).ok());
  auto f = fs_->OpenForRead(P("c"));
  ASSERT_TRUE(f.ok());
  auto token = std::make_shared<CancelToken>();
  IoContext ctx;
  ctx.cancel = token;
  token->Cancel();
  std::vector<std::promise<Result<std::string>>> done(32);
  for (int i = 0; i < 32; ++i) {
    (*f)->ReadAsync(
        static_cast<uint64_t>(i) * 1000, 1000,
        [&done, i](Result<std::string> r) { done[i].set_value(std::move(r)); }, ctx);
  }
  for (auto& p : done) {
    auto fut = p.get_future();
    ASSERT_EQ(fut.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    EXPECT_EQ(fut.get().status().code(), StatusCode::kCancelled);
  }
}

TEST_F(S3ServerTest, RenameMovesTheObject) {
  ASSERT_TRUE(fs_->WriteAll(P("from"), "payload").ok());
  ASSERT_TRUE(fs_->Rename(P("from"), P("to")).ok());
  EXPECT_FALSE(fs_->Exists(P("from")));
  EXPECT_EQ(*fs_->ReadAll(P("to")), "payload");
}

TEST_F(S3ServerTest, KeysWithSpecialCharactersRoundTrip) {
  for (const std::string name :
       {"a b", "plus+sign", "percent%20", "utf8-\xC3\xA9", "dot/../x", "q?x=1&y", "tilde~star*"}) {
    ASSERT_TRUE(fs_->WriteAll(P(name), name).ok()) << name;
    auto back = fs_->ReadAll(P(name));
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().ToString();
    EXPECT_EQ(*back, name);
  }
  auto list = fs_->List(root_);
  ASSERT_TRUE(list.ok());
  bool found = false;
  for (const auto& e : *list) found |= e.path == P("plus+sign");
  EXPECT_TRUE(found);
}

TEST_F(S3ServerTest, VirtualHostedAddressingWorks) {
  S3Options o = options_;
  auto endpoint = std::string(o.aws.endpoint_url);
  endpoint.replace(endpoint.find("127.0.0.1"), 9, "localhost");  // curl: *.localhost is loopback
  o.aws.endpoint_url = endpoint;
  o.aws.addressing = S3Addressing::kVirtualHosted;
  auto fs = std::move(NewS3FileSystem(o)).value();
  ASSERT_TRUE(fs->WriteAll(P("vhost"), "virtual").ok());
  auto back = fs_->ReadAll(P("vhost"));  // read back path-style
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "virtual");
  auto list = fs->List(root_);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->size(), 1u);
}

TEST_F(S3ServerTest, AnonymousReadsPublicObjectsAndCannotWrite) {
  const std::string bucket = "sluice-public";
  ASSERT_TRUE(testing::CreateBucket(options_, bucket, "public-read").ok());
  auto client = std::move(S3Client::Make(options_)).value();
  S3Call put;
  put.method = "PUT";
  put.path = S3Path{bucket, "open.txt"};
  put.headers = {{"x-amz-acl", "public-read"}};
  put.body = std::make_shared<const std::string>("for everyone");
  ASSERT_TRUE(client->Run(put).ok());
  S3Options o = options_;
  o.aws.credentials.reset();
  o.aws.anonymous = true;
  auto anon = std::move(NewS3FileSystem(o)).value();
  auto back = anon->ReadAll("s3://" + bucket + "/open.txt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "for everyone");
  Status s = anon->WriteAll("s3://" + bucket + "/nope.txt", "x");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("403"), std::string::npos) << s.ToString();
}

TEST_F(S3ServerTest, EngineCountsRequestsAndBytes) {
  HttpEngine engine;
  S3Options o = options_;
  o.engine = &engine;
  auto fs = std::move(NewS3FileSystem(o)).value();
  ASSERT_TRUE(fs->WriteAll(P("s"), std::string(5000, 's')).ok());
  ASSERT_TRUE(fs->ReadAll(P("s")).ok());
  HttpEngineStats s = engine.stats();
  EXPECT_EQ(s.requests, 3u);  // PUT, HEAD, GET
  EXPECT_EQ(s.bytes_sent, 5000u);
  EXPECT_EQ(s.bytes_received, 5000u);
  EXPECT_EQ(s.in_flight, 0u);
}

TEST_F(S3ServerTest, ListedObjectOpensWithoutAHeadAndReadsItsBytes) {
  HttpEngine engine;
  S3Options o = options_;
  o.engine = &engine;
  auto fs = std::move(NewS3FileSystem(o)).value();
  ASSERT_TRUE(fs->WriteAll(P("dir/a"), std::string(3000, 'a')).ok());
  ASSERT_TRUE(fs->WriteAll(P("dir/b"), std::string(10, 'b')).ok());
  auto listed = fs->List(P("dir"));
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_FALSE((*listed)[0].etag.empty()) << "a listing gives each object's ETag";
  const uint64_t before = engine.stats().requests;
  auto f = fs->OpenListedForRead((*listed)[0]);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(engine.stats().requests, before) << "no HEAD";
  EXPECT_EQ((*f)->size(), 3000u);
  std::string scratch(3000, '\0');
  auto r = (*f)->Read(0, 3000, scratch.data());
  ASSERT_TRUE(r.ok()) << r.status().ToString() << " (the listed ETag must match the GET's)";
  EXPECT_EQ(std::string(*r), std::string(3000, 'a'));
  EXPECT_EQ(engine.stats().requests, before + 1);
}

// Ranges read in one call come back each exactly, in the order asked, whatever the requests
// they were merged into: adjacent, overlapping, repeated, out of order, empty, past the end,
// and far apart (three requests). One range per request takes its body without a copy.
TEST_F(S3ServerTest, RangesReadTogetherComeBackEachExactly) {
  HttpEngine engine;
  S3Options o = options_;
  o.engine = &engine;
  o.coalesce.max_gap = 1000;
  o.coalesce.max_request = 1 << 20;
  auto fs = std::move(NewS3FileSystem(o)).value();
  std::string data(200000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(Mix64(i) & 0xff);
  ASSERT_TRUE(fs->WriteAll(P("ranges/obj"), data).ok());
  auto f = fs->OpenForRead(P("ranges/obj"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const std::vector<ByteRange> ranges = {
      {100, 50},   {0, 100},      {100, 50},  {120, 10},      {500, 0},       {160, 300},
      {150000, 5}, {150000, 40000}, {199990, 100}, {250000, 10}, {149000, 900}};
  const uint64_t before = engine.stats().requests;
  std::promise<Result<std::vector<std::string>>> done;
  (*f)->ReadRangesAsync(ranges, [&](Result<std::vector<std::string>> got) {
    done.set_value(std::move(got));
  });
  Result<std::vector<std::string>> got = done.get_future().get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const uint64_t at = std::min<uint64_t>(ranges[i].offset, data.size());
    EXPECT_EQ((*got)[i], data.substr(at, ranges[i].length)) << "range " << i;
  }
  // [0, 460), [149000, 190000) and [199990, 200000) (9,990 bytes apart: past max_gap)
  EXPECT_EQ(engine.stats().requests - before, 3u);
  // With buffers given (a pipeline's recycled ones: longer, holding stale bytes), the ranges
  // cut out of a request body are copied into them, and still come back exactly.
  IoContext context;
  std::atomic<int> given{0};
  context.buffer = [&](size_t n) {
    ++given;
    return std::string(n + 777, 'z');
  };
  std::promise<Result<std::vector<std::string>>> again;
  (*f)->ReadRangesAsync(
      ranges, [&](Result<std::vector<std::string>> r) { again.set_value(std::move(r)); },
      context);
  got = again.get_future().get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const uint64_t at = std::min<uint64_t>(ranges[i].offset, data.size());
    EXPECT_EQ((*got)[i], data.substr(at, ranges[i].length)) << "range " << i;
  }
  // Three request bodies, and the ranges copied out of them (all but the three takers and
  // the two past the end or empty, which are in no request).
  EXPECT_GE(given.load(), 3 + 6);
}

TEST_F(S3ServerTest, IsDirectoryIsOneListing) {
  HttpEngine engine;
  S3Options o = options_;
  o.engine = &engine;
  auto fs = std::move(NewS3FileSystem(o)).value();
  ASSERT_TRUE(fs->WriteAll(P("isdir/sub/x"), "x").ok());
  ASSERT_TRUE(fs->WriteAll(P("isdir/file"), "f").ok());
  const uint64_t before = engine.stats().requests;
  EXPECT_TRUE(fs->IsDirectory(P("isdir")));
  EXPECT_TRUE(fs->IsDirectory(P("isdir/sub/")));
  EXPECT_FALSE(fs->IsDirectory(P("isdir/file")));
  EXPECT_FALSE(fs->IsDirectory(P("isdir/missing")));
  EXPECT_EQ(engine.stats().requests - before, 4u);
}

TEST_F(S3ServerTest, ObjectReplacedSinceTheListingFailsItsReadsNeverMixed) {
  ASSERT_TRUE(fs_->WriteAll(P("l/v"), std::string(1000, '1')).ok());
  auto listed = fs_->List(P("l"));
  ASSERT_TRUE(listed.ok() && listed->size() == 1u);
  ASSERT_TRUE(fs_->WriteAll(P("l/v"), std::string(1000, '2')).ok());
  auto f = fs_->OpenListedForRead((*listed)[0]);
  ASSERT_TRUE(f.ok());
  std::string scratch(100, '\0');
  auto r = (*f)->Read(0, 100, scratch.data());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("changed while open"), std::string::npos);
  EXPECT_NE(r.status().message().find(P("l/v")), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace sluice::io

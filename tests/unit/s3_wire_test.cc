// S3 wire correctness against a scripted server on loopback: a put-if-absent whose reply was
// lost meets its own object on the retry; a ranged GET answered with another range is retried,
// never handed on; URLs are printed without their secrets.
#include <gtest/gtest.h>

#include <cstdio>
#include <mutex>
#include <optional>

#include "io/url.h"
#include "sluice/io/s3_file_system.h"
#include "unit/http_test_server.h"

namespace sluice::io {
namespace {

using sluice::testing::ScriptedHttpServer;
using Reply = ScriptedHttpServer::Reply;
using Received = ScriptedHttpServer::Received;
using namespace std::chrono_literals;

// An S3 file system on `server` (path style, unsigned) with fast retries on its own engine.
struct ScriptedS3 {
  explicit ScriptedS3(const ScriptedHttpServer& server, int max_attempts = 4) {
    HttpEngineOptions o;
    o.stall_timeout = 2000ms;
    engine = std::make_unique<HttpEngine>(o);
    S3Options options;
    options.aws.endpoint_url = server.Url("");
    options.aws.region = "us-east-1";
    options.aws.anonymous = true;
    options.engine = engine.get();
    options.hedge_reads = false;
    RetryPolicy::Options retry;
    retry.base_delay = 1ms;
    retry.max_delay = 4ms;
    retry.max_attempts = max_attempts;
    options.retry = S3RetryPolicy(retry);
    auto made = NewS3FileSystem(std::move(options));
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    if (made.ok()) fs = std::move(*made);
  }
  std::unique_ptr<HttpEngine> engine;
  std::unique_ptr<FileSystem> fs;
};

// One object, "/bkt/k", behind If-None-Match: * semantics. `reset_first_put`: the first PUT is
// stored, then the connection is reset before the reply (what the client sees of a reply
// lost on the way back).
class OneObjectServer {
 public:
  explicit OneObjectServer(bool reset_first_put, std::optional<std::string> initial = {})
      : object_(std::move(initial)),
        reset_next_put_(reset_first_put),
        server_([this](const Received& r) { return Handle(r); }) {}
  const ScriptedHttpServer& server() const { return server_; }
  std::optional<std::string> object() {
    std::lock_guard<std::mutex> lock(mu_);
    return object_;
  }

 private:
  Reply Handle(const Received& r) {
    std::lock_guard<std::mutex> lock(mu_);
    Reply reply;
    if (r.target != "/bkt/k") {
      reply.status = 404;
    } else if (r.method == "PUT") {
      if (object_.has_value() && r.headers.count("if-none-match")) {
        reply.status = 412;
      } else {
        object_ = r.body;
        reply.reset = reset_next_put_;
        reset_next_put_ = false;
      }
    } else if (r.method == "GET" && object_.has_value()) {
      reply.body = *object_;
    } else {
      reply.status = 404;
    }
    return reply;
  }

  std::mutex mu_;
  std::optional<std::string> object_;  // guarded by mu_
  bool reset_next_put_;                // guarded by mu_
  ScriptedHttpServer server_;
};

TEST(S3PutIfAbsent, AmbiguousPutOfOwnObjectIsSuccess) {
  OneObjectServer store(/*reset_first_put=*/true);
  ScriptedS3 s3(store.server());
  Status s = s3.fs->PutIfAbsent("s3://bkt/k", ByteView("run 7's manifest"));
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(store.object(), "run 7's manifest");
}

TEST(S3PutIfAbsent, PutMeetingAnotherWritersObjectIsAlreadyExists) {
  OneObjectServer store(/*reset_first_put=*/false, std::string("run 3's manifest"));
  ScriptedS3 s3(store.server());
  Status s = s3.fs->PutIfAbsent("s3://bkt/k", ByteView("run 7's manifest"));
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_NE(s.message().find("s3://bkt/k"), std::string::npos) << s.ToString();
  EXPECT_EQ(store.object(), "run 3's manifest");
}

// An object of 100 bytes whose ranged GETs get a Content-Range shifted by one byte (same body
// length, other bytes) the first `wrong` times.
class WrongRangeServer {
 public:
  explicit WrongRangeServer(int wrong)
      : wrong_(wrong), server_([this](const Received& r) { return Handle(r); }) {
    for (int i = 0; i < 100; ++i) object_ += static_cast<char>('a' + i % 26);
  }
  const ScriptedHttpServer& server() const { return server_; }
  int gets() const { return gets_; }
  const std::string& object() const { return object_; }

 private:
  Reply Handle(const Received& r) {
    Reply reply;
    if (r.method == "HEAD") {
      reply.headers = {{"Content-Length", "100"}, {"ETag", "\"e\""}};
      return reply;
    }
    uint64_t first = 0, last = 0;
    std::sscanf(r.headers.at("range").c_str(), "bytes=%lu-%lu", &first, &last);
    const bool wrong = gets_++ < wrong_;
    const uint64_t shift = wrong ? 1 : 0;
    reply.status = 206;
    reply.headers = {{"Content-Range", "bytes " + std::to_string(first + shift) + "-" +
                                           std::to_string(last + shift) + "/100"},
                     {"ETag", "\"e\""}};
    reply.body = object_.substr(first + shift, last - first + 1);
    return reply;
  }

  const int wrong_;
  std::atomic<int> gets_{0};
  std::string object_;
  ScriptedHttpServer server_;
};

TEST(S3Read, WrongContentRangeIsRetriedAndTheAskedBytesReturned) {
  WrongRangeServer server(/*wrong=*/2);
  ScriptedS3 s3(server.server());
  auto file = s3.fs->OpenForRead("s3://bkt/k");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  char scratch[10];
  auto got = (*file)->Read(40, 10, scratch);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(std::string(*got), server.object().substr(40, 10));
  EXPECT_EQ(server.gets(), 3);
}

TEST(S3Read, WrongContentRangeOnEveryAttemptFailsAsTransferErrorNamingUrlAndRange) {
  WrongRangeServer server(/*wrong=*/1000);
  ScriptedS3 s3(server.server(), /*max_attempts=*/3);
  auto file = s3.fs->OpenForRead("s3://bkt/k");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  char scratch[10];
  auto got = (*file)->Read(40, 10, scratch);
  ASSERT_FALSE(got.ok());
  // A failed transfer, not damaged data: on_error="skip" must not turn it into skipped records.
  EXPECT_EQ(got.status().code(), StatusCode::kIoError) << got.status().ToString();
  const std::string m = got.status().message();
  EXPECT_NE(m.find("s3://bkt/k"), std::string::npos) << m;
  EXPECT_NE(m.find(server.server().Url("/bkt/k")), std::string::npos) << m;
  EXPECT_NE(m.find("asked for bytes 40-49"), std::string::npos) << m;
  EXPECT_NE(m.find("bytes 41-50/100"), std::string::npos) << m;
  EXPECT_EQ(server.gets(), 3);
}

TEST(RedactUrl, UserInfoAndSecretParametersAreHidden) {
  EXPECT_EQ(RedactUrl("http://AKID:SECRET@host:9000/b/k"), "http://***@host:9000/b/k");
  EXPECT_EQ(RedactUrl("http://AKID:SECRET@host"), "http://***@host");
  EXPECT_EQ(RedactUrl("https://h/b/k?X-Amz-Credential=AKID%2F1&X-Amz-Signature=abc&partNumber=2"),
            "https://h/b/k?X-Amz-Credential=***&X-Amz-Signature=***&partNumber=2");
  EXPECT_EQ(RedactUrl("http://nn:9870/webhdfs/v1/x?op=OPEN&delegation=TOKEN#frag"),
            "http://nn:9870/webhdfs/v1/x?op=OPEN&delegation=***#frag");
  // Nothing to hide: unchanged (an '@' in a path is not user info).
  for (const char* plain : {"http://127.0.0.1:7480/b/a@b?list-type=2", "s3://bucket/key",
                            "/local/path@x", "hdfs://nn:9870/a"}) {
    EXPECT_EQ(RedactUrl(plain), plain);
  }
}

TEST(RedactUrl, EndpointWithUserInfoIsRefusedWithoutPrintingTheSecret) {
  S3Options options;
  options.aws.endpoint_url = "http://AKID:SECRET@127.0.0.1:7480";
  auto fs = NewS3FileSystem(options);
  ASSERT_FALSE(fs.ok());
  EXPECT_EQ(fs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fs.status().message().find("SECRET"), std::string::npos) << fs.status().ToString();
  EXPECT_EQ(fs.status().message().find("AKID"), std::string::npos) << fs.status().ToString();
  EXPECT_NE(fs.status().message().find("127.0.0.1:7480"), std::string::npos);
}

TEST(RedactUrl, UrisWithUserInfoAreNotEchoedInErrors) {
  std::string local;
  for (const char* uri : {"ftp://AKID:SECRET@host/x", "hdfs://AKID:SECRET@nn:9870/x",
                          "s3://AKID:SECRET@bucket/key"}) {
    std::string message;
    auto fs = FileSystemFor(uri, &local);
    if (!fs.ok()) {
      message = fs.status().ToString();
    } else {
      message = (*fs)->Stat(local).status().ToString();
    }
    EXPECT_FALSE(message.empty()) << uri;
    EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace sluice::io

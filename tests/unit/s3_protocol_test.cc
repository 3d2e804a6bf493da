// S3's XML documents and error replies, decoded without a server.
#include <gtest/gtest.h>

#include "io/s3_client.h"
#include "io/s3_errors.h"
#include "io/s3_xml.h"
#include "io/xml.h"

namespace sluice::io {
namespace {

TEST(S3Xml, ListPageWithObjectsPrefixesAndContinuation) {
  const char* xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><Prefix>data%2F</Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys>"
      "<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>tok+/=</NextContinuationToken>"
      "<Contents><Key>data/a%20b.tfrecord</Key><Size>1234</Size><ETag>&quot;e1&quot;</ETag></"
      "Contents>"
      "<Contents><Key>data/%E2%82%AC.idx</Key><Size>0</Size><ETag>\"e2\"</ETag></Contents>"
      "<CommonPrefixes><Prefix>data/sub%2B/</Prefix></CommonPrefixes>"
      "</ListBucketResult>";
  auto page = ParseListObjectsV2(xml, "s3://b/data/");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "data/a b.tfrecord");
  EXPECT_EQ(page->objects[0].size, 1234u);
  EXPECT_EQ(page->objects[0].etag, "\"e1\"");
  EXPECT_EQ(page->objects[1].key, "data/\xE2\x82\xAC.idx");
  ASSERT_EQ(page->prefixes.size(), 1u);
  EXPECT_EQ(page->prefixes[0], "data/sub+/");
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "tok+/=");
}

TEST(S3Time, ListingAndHeaderTimesAreMillisecondsSinceTheEpoch) {
  // 2026-12-01T23:05:09Z is 1796166309 s after the epoch.
  EXPECT_EQ(ParseIso8601Ms("2026-12-01T23:05:09.123Z"), 1796166309123);
  EXPECT_EQ(ParseIso8601Ms("2026-12-01T23:05:09Z"), 1796166309000);
  EXPECT_EQ(ParseIso8601Ms("2026-12-01T23:05:09.5Z"), 1796166309500);
  EXPECT_EQ(ParseHttpDateMs("Tue, 01 Dec 2026 23:05:09 GMT"), 1796166309000);
  auto page = ParseListObjectsV2(
      "<ListBucketResult><Contents><Key>k</Key><Size>1</Size>"
      "<LastModified>2026-12-01T23:05:09.123Z</LastModified></Contents>"
      "<IsTruncated>false</IsTruncated></ListBucketResult>",
      "s3://b/");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->objects[0].last_modified_ms, 1796166309123);
}

TEST(S3Time, UnreadableTimesAreUnknownNotWrong) {
  for (const char* bad : {"", "yesterday", "2026-13-01T00:00:00Z", "2026-12-01",
                          "Tue, 01 Foo "
                          "2026 23:05:09 GMT",
                          "Tue, 01 Dec 2026 25:05:09 GMT"}) {
    EXPECT_EQ(ParseIso8601Ms(bad), 0) << bad;
    EXPECT_EQ(ParseHttpDateMs(bad), 0) << bad;
  }
}

TEST(S3Xml, UnencodedListingKeepsKeysAsWritten) {
  auto page = ParseListObjectsV2(
      "<ListBucketResult><Contents><Key>a%20b</Key><Size>1</Size></Contents>"
      "<IsTruncated>false</IsTruncated></ListBucketResult>",
      "s3://b/");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->objects[0].key, "a%20b");
  EXPECT_FALSE(page->truncated);
}

TEST(S3Xml, TruncatedListingWithoutTokenIsRejected) {
  auto page = ParseListObjectsV2(
      "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "s3://b/p/");
  EXPECT_EQ(page.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(page.status().message().find("s3://b/p/"), std::string::npos);
}

TEST(S3Xml, MalformedListingsAreDataLossNamingTheSource) {
  for (const char* bad :
       {"", "<ListBucketResult>", "not xml", "<Other/>",
        "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>12x</Size></Contents></ListBucketResult>",
        "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%zz</Key><Size>1</Size>"
        "</Contents></ListBucketResult>"}) {
    auto page = ParseListObjectsV2(bad, "s3://b/x/");
    ASSERT_FALSE(page.ok()) << bad;
    EXPECT_EQ(page.status().code(), StatusCode::kDataLoss) << bad;
    EXPECT_NE(page.status().message().find("s3://b/x/"), std::string::npos);
  }
}

TEST(S3Xml, DeeplyNestedDocumentIsRejected) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  EXPECT_EQ(ParseXml(deep, "x").status().code(), StatusCode::kDataLoss);
}

TEST(S3Xml, MultipartDocuments) {
  auto id = ParseInitiateMultipartUpload(
      "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
      "<UploadId>2~abc</UploadId></InitiateMultipartUploadResult>",
      "s3://b/k");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "2~abc");
  EXPECT_FALSE(ParseInitiateMultipartUpload("<InitiateMultipartUploadResult/>", "s3://b/k").ok());
  EXPECT_EQ(CompleteMultipartUploadBody({{1, "\"a\""}, {2, "\"b&\""}}),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag>"
            "</Part><Part><PartNumber>2</PartNumber><ETag>&quot;b&amp;&quot;</ETag></Part>"
            "</CompleteMultipartUpload>");
}

TEST(S3Xml, DeleteObjectsRoundTrip) {
  EXPECT_EQ(DeleteObjectsBody({"a<b", "c"}),
            "<Delete><Quiet>true</Quiet><Object><Key>a&lt;b</Key></Object>"
            "<Object><Key>c</Key></Object></Delete>");
  auto failures = ParseDeleteObjectsResult(
      "<DeleteResult><Deleted><Key>c</Key></Deleted><Error><Key>a&lt;b</Key>"
      "<Code>AccessDenied</Code><Message>no</Message></Error></DeleteResult>",
      "s3://b");
  ASSERT_TRUE(failures.ok());
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_EQ((*failures)[0].key, "a<b");
  EXPECT_EQ((*failures)[0].code, "AccessDenied");
}

TEST(S3Errors, ErrorDocumentGivesCodeMessageAndStatusCode) {
  HttpResponse r;
  r.status = 404;
  r.attempts = 1;
  r.body =
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The specified key does not "
      "exist.</Message><RequestId>tx00</RequestId></Error>";
  Status s = S3ErrorStatus("s3://b/k", "GET", "http://h/b/k", r);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "s3://b/k: GET http://h/b/k: HTTP 404 NoSuchKey (The specified key does not exist.) "
            "after 1 attempt [request id tx00]");
  EXPECT_EQ(S3ErrorCode(404, r.body), "NoSuchKey");
}

TEST(S3Errors, BodilessRepliesGetACodeFromTheStatus) {
  HttpResponse r;
  r.status = 403;
  r.attempts = 1;
  Status s = S3ErrorStatus("s3://b/k", "HEAD", "http://h/b/k", r);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("HTTP 403 Forbidden"), std::string::npos);
  EXPECT_EQ(S3ErrorCode(503, ""), "ServiceUnavailable");
  EXPECT_EQ(S3ErrorCode(200, "<ok/>"), "");
  EXPECT_EQ(S3ErrorCode(200, "<Error><Code>InternalError</Code></Error>"), "InternalError");
}

TEST(S3Errors, WrongRegionNamesTheRightOne) {
  HttpResponse r;
  r.status = 301;
  r.attempts = 1;
  r.headers = {{"x-amz-bucket-region", "eu-central-1"}};
  Status s = S3ErrorStatus("s3://b/k", "GET", "https://s3.us-east-1.amazonaws.com/b/k", r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("eu-central-1"), std::string::npos);
}

TEST(S3Errors, RetriedStormSaysHowManyAttempts) {
  HttpResponse r;
  r.status = 503;
  r.attempts = 6;
  r.body =
      "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
  Status s = S3ErrorStatus("s3://b/k", "GET", "http://h/b/k", r);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(
      s.message().find("HTTP 503 SlowDown (Please reduce your request rate.) after 6 attempts"),
      std::string::npos);
}

TEST(S3Path, ParsesBucketAndKey) {
  auto p = ParseS3Path("s3://my-bucket/a/b c");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bucket, "my-bucket");
  EXPECT_EQ(p->key, "a/b c");
  EXPECT_EQ(p->Uri(), "s3://my-bucket/a/b c");
  p = ParseS3Path("s3://bucket");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->key, "");
  for (const char* bad : {"s3://", "s3://a/x", "s3://bad bucket/x", "http://b/x", "s3:///x"}) {
    EXPECT_EQ(ParseS3Path(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

S3Options OptionsFor(const std::string& endpoint, S3Addressing addressing) {
  S3Options o;
  o.aws.endpoint_url = endpoint;
  o.aws.region = "eu-west-1";
  o.aws.addressing = addressing;
  o.aws.credentials = AwsCredentials{"AKID", "SECRET", ""};
  return o;
}

TEST(S3Client, PathStyleForServersVirtualHostedForAws) {
  auto custom = S3Client::Make(OptionsFor("http://127.0.0.1:7480", S3Addressing::kAuto));
  ASSERT_TRUE(custom.ok());
  S3Call call;
  call.path = S3Path{"bucket", "dir/a b+c"};
  EXPECT_EQ((*custom)->Build(call).url, "http://127.0.0.1:7480/bucket/dir/a%20b%2Bc");
  auto aws = S3Client::Make(OptionsFor("", S3Addressing::kAuto));
  ASSERT_TRUE(aws.ok());
  HttpRequest r = (*aws)->Build(call);
  EXPECT_EQ(r.url, "https://bucket.s3.eu-west-1.amazonaws.com/dir/a%20b%2Bc");
  EXPECT_EQ(*FindHeader(r.headers, "host"), "bucket.s3.eu-west-1.amazonaws.com");
  call.path.bucket = "dotted.bucket";  // no virtual host under TLS with dots
  EXPECT_EQ((*aws)->Build(call).url,
            "https://s3.eu-west-1.amazonaws.com/dotted.bucket/dir/a%20b%2Bc");
  auto forced = S3Client::Make(OptionsFor("http://minio.local:9000", S3Addressing::kVirtualHosted));
  call.path.bucket = "bucket";
  call.query = {{"list-type", "2"}, {"prefix", "a/"}};
  EXPECT_EQ((*forced)->Build(call).url,
            "http://bucket.minio.local:9000/dir/a%20b%2Bc?list-type=2&prefix=a%2F");
  auto path = S3Client::Make(OptionsFor("", S3Addressing::kPath));
  call.query.clear();
  EXPECT_EQ((*path)->Build(call).url, "https://s3.eu-west-1.amazonaws.com/bucket/dir/a%20b%2Bc");
}

TEST(S3Client, RequestsAreSignedAndHashedButTheSecretIsNotSent) {
  auto client = S3Client::Make(OptionsFor("http://127.0.0.1:7480", S3Addressing::kAuto));
  ASSERT_TRUE(client.ok());
  S3Call call;
  call.method = "PUT";
  call.path = S3Path{"bucket", "k"};
  call.body = std::make_shared<const std::string>("Welcome to Amazon S3.");
  HttpRequest r = (*client)->Build(call);
  ASSERT_NE(r.signer, nullptr);
  r.signer->Sign(std::chrono::system_clock::now(), &r);
  ASSERT_NE(FindHeader(r.headers, "authorization"), nullptr);
  EXPECT_NE(FindHeader(r.headers, "authorization")->find("Credential=AKID/"), std::string::npos);
  EXPECT_EQ(*FindHeader(r.headers, "x-amz-content-sha256"),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  for (const auto& [k, v] : r.headers) EXPECT_EQ(v.find("SECRET"), std::string::npos) << k;
  EXPECT_EQ(r.url.find("SECRET"), std::string::npos);
}

TEST(S3Client, NoCredentialsIsAClearErrorNamingWhereItLooked) {
  S3Options o = OptionsFor("http://127.0.0.1:7480", S3Addressing::kAuto);
  o.aws.credentials.reset();
  o.aws.credentials_source = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile 'default'";
  auto client = S3Client::Make(o);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->ready().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE((*client)->ready().message().find("profile 'default'"), std::string::npos);
  EXPECT_NE((*client)->ready().message().find("AWS_NO_SIGN_REQUEST"), std::string::npos);
  o.aws.anonymous = true;
  client = S3Client::Make(o);
  EXPECT_TRUE((*client)->ready().ok());
  S3Call call;
  call.path = S3Path{"bucket", "k"};
  EXPECT_EQ((*client)->Build(call).signer, nullptr);
}

}  // namespace
}  // namespace sluice::io

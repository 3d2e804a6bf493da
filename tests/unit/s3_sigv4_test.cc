// SigV4 against AWS's published examples, byte for byte: the four S3 examples of the
// "Signature Calculations for the Authorization Header" page (secret ...EXAMPLEKEY, 2013-05-24)
// and cases of the Signature Version 4 test suite (service "service", 2015-08-30).
#include <gtest/gtest.h>

#include "io/sigv4.h"
#include "io/url.h"

namespace sluice::io {
namespace {

using std::chrono::system_clock;

system_clock::time_point At(int year, int month, int day, int h, int m, int s) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = s;
  return system_clock::from_time_t(timegm(&tm));
}

// The S3 documentation's examples.
const AwsCredentials kS3DocKeys{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                ""};
const system_clock::time_point kS3DocTime = At(2013, 5, 24, 0, 0, 0);

TEST(SigV4, S3GetObjectWithRange) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/test.txt";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", kEmptySha256}};
  r.payload_hash = kEmptySha256;
  SigV4Signature s = SignV4(r, kS3DocKeys, "us-east-1", "s3", kS3DocTime);
  EXPECT_EQ(s.canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  ASSERT_EQ(s.headers.size(), 2u);  // x-amz-date, Authorization
  EXPECT_EQ(s.headers[0].second, "20130524T000000Z");
}

TEST(SigV4, S3PutObjectSignsItsPayloadAndEncodesTheKey) {
  const std::string body = "Welcome to Amazon S3.";
  const std::string hash = Sha256Hex(body);
  EXPECT_EQ(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  const std::string uri = "/" + UriEncode("test$file.text", true);
  SigV4Request r;
  r.method = "PUT";
  r.canonical_uri = uri;
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"x-amz-content-sha256", hash}};
  r.payload_hash = hash;
  SigV4Signature s = SignV4(r, kS3DocKeys, "us-east-1", "s3", kS3DocTime);
  EXPECT_EQ(s.canonical_request,
            "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\n"
            "host:examplebucket.s3.amazonaws.com\nx-amz-content-sha256:" +
                hash +
                "\nx-amz-date:20130524T000000Z\nx-amz-storage-class:REDUCED_REDUNDANCY\n\n"
                "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n" +
                hash);
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
  EXPECT_EQ(s.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

// A bodiless GET on the bucket of the S3 examples, with `query` (canonical form).
SigV4Signature SignBucketGet(const std::string& query) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.canonical_query = query;
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"x-amz-content-sha256", kEmptySha256}};
  r.payload_hash = kEmptySha256;
  return SignV4(r, kS3DocKeys, "us-east-1", "s3", kS3DocTime);
}

TEST(SigV4, S3GetBucketLifecycleHasAnEmptyQueryValue) {
  const std::string query = CanonicalQuery({{"lifecycle", ""}});
  EXPECT_EQ(query, "lifecycle=");
  SigV4Signature s = SignBucketGet(query);
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca");
  EXPECT_EQ(s.signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4, S3ListObjectsSortsTheQuery) {
  const std::string query = CanonicalQuery({{"prefix", "J"}, {"max-keys", "2"}});
  EXPECT_EQ(query, "max-keys=2&prefix=J");
  SigV4Signature s = SignBucketGet(query);
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7");
  EXPECT_EQ(s.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

// The Signature Version 4 test suite: host example.amazonaws.com, service "service".
struct SuiteCase {
  const char* name;
  const char* method;
  const char* path;  // decoded
  QueryParams query;
  HttpHeaders headers;  // besides host
  const char* body;
  const char* signature;
};

const AwsCredentials kSuiteKeys{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};

class SigV4Suite : public ::testing::TestWithParam<SuiteCase> {};

TEST_P(SigV4Suite, MatchesThePublishedSignature) {
  const SuiteCase& c = GetParam();
  const std::string uri = UriEncode(c.path, true);
  const std::string query = CanonicalQuery(c.query);
  SigV4Request r;
  r.method = c.method;
  r.canonical_uri = uri;
  r.canonical_query = query;
  r.headers = c.headers;
  r.headers.emplace_back("Host", "example.amazonaws.com");
  const std::string hash = Sha256Hex(c.body);
  r.payload_hash = hash;
  SigV4Signature s = SignV4(r, kSuiteKeys, "us-east-1", "service", At(2015, 8, 30, 12, 36, 0));
  EXPECT_EQ(s.signature, c.signature) << c.name << "\n" << s.canonical_request;
  EXPECT_NE(s.authorization.find("Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    AwsTestSuite, SigV4Suite,
    ::testing::Values(
        SuiteCase{"get-vanilla",
                  "GET",
                  "/",
                  {},
                  {},
                  "",
                  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
        SuiteCase{"get-vanilla-query-order-key-case",
                  "GET",
                  "/",
                  {{"Param2", "value2"}, {"Param1", "value1"}},
                  {},
                  "",
                  "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
        SuiteCase{"get-vanilla-query-unreserved",
                  "GET",
                  "/",
                  {{"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                    "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}},
                  {},
                  "",
                  "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
        SuiteCase{"get-vanilla-utf8-query",
                  "GET",
                  "/",
                  {{"\xE1\x88\xB4", "bar"}},
                  {},
                  "",
                  "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
        SuiteCase{"get-unreserved",
                  "GET",
                  "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                  {},
                  {},
                  "",
                  "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
        SuiteCase{"get-utf8",
                  "GET",
                  "/\xE1\x88\xB4",
                  {},
                  {},
                  "",
                  "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
        SuiteCase{"get-header-key-duplicate",
                  "GET",
                  "/",
                  {},
                  {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}},
                  "",
                  "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
        SuiteCase{"get-header-value-trim",
                  "GET",
                  "/",
                  {},
                  {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}},
                  "",
                  "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
        SuiteCase{"post-header-value-case",
                  "POST",
                  "/",
                  {},
                  {{"My-Header1", "VALUE1"}},
                  "",
                  "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
        SuiteCase{"post-vanilla-query",
                  "POST",
                  "/",
                  {{"Param1", "value1"}},
                  {},
                  "",
                  "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
        SuiteCase{"post-vanilla-query-nonunreserved",
                  "POST",
                  "/",
                  {{"@#$%^", ""}, {"+", "/,?><`\";:\\|][{}"}},
                  {},
                  "",
                  "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"},
        SuiteCase{"post-x-www-form-urlencoded",
                  "POST",
                  "/",
                  {},
                  {{"Content-Type", "application/x-www-form-urlencoded"}},
                  "Param1=value1",
                  "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"}),
    [](const ::testing::TestParamInfo<SuiteCase>& info) {
      std::string n = info.param.name;
      for (char& c : n) {
        if (c == '-') c = '_';
      }
      return n;
    });

TEST(SigV4, SessionTokenIsSentAndSigned) {
  AwsCredentials keys = kSuiteKeys;
  keys.session_token = "token/with+chars";
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.headers = {{"Host", "example.amazonaws.com"}};
  r.payload_hash = kEmptySha256;
  SigV4Signature s = SignV4(r, keys, "us-east-1", "s3", At(2015, 8, 30, 12, 36, 0));
  EXPECT_NE(s.canonical_request.find("x-amz-security-token:token/with+chars\n"), std::string::npos);
  EXPECT_NE(s.authorization.find("SignedHeaders=host;x-amz-date;x-amz-security-token"),
            std::string::npos);
  bool sent = false;
  for (const auto& [k, v] : s.headers)
    sent |= k == "x-amz-security-token" && v == keys.session_token;
  EXPECT_TRUE(sent);
}

TEST(SigV4, SecretNeverAppearsInWhatIsSent) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.headers = {{"Host", "h"}};
  r.payload_hash = kEmptySha256;
  SigV4Signature s = SignV4(r, kSuiteKeys, "us-east-1", "s3", At(2020, 1, 1, 0, 0, 0));
  for (const auto& [k, v] : s.headers) {
    EXPECT_EQ(v.find(kSuiteKeys.secret_access_key), std::string::npos) << k;
  }
}

TEST(SigV4, DifferentClockGivesDifferentSignature) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.headers = {{"Host", "h"}};
  r.payload_hash = kEmptySha256;
  auto a = SignV4(r, kSuiteKeys, "us-east-1", "s3", At(2020, 1, 1, 0, 0, 0));
  auto b = SignV4(r, kSuiteKeys, "us-east-1", "s3", At(2020, 1, 1, 0, 0, 1));
  EXPECT_NE(a.signature, b.signature);
  EXPECT_EQ(AmzDate(At(2020, 1, 1, 0, 0, 1)), "20200101T000001Z");
}

TEST(UriEncode, KeepsUnreservedAndEncodesTheRest) {
  EXPECT_EQ(UriEncode("a b/c~d*e+f", true), "a%20b/c~d%2Ae%2Bf");
  EXPECT_EQ(UriEncode("a b/c", false), "a%20b%2Fc");
  EXPECT_EQ(UriEncode("\xC3\xA9", false), "%C3%A9");
  EXPECT_EQ(*UriDecode("a%20b%2Fc%c3%a9"), "a b/c\xC3\xA9");
  EXPECT_EQ(UriDecode("bad%2").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(UriDecode("bad%zz").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(UriDecode("end%").status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseEndpoint, AcceptsHostsPortsAndIpv6) {
  auto e = ParseEndpoint("http://127.0.0.1:7480");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 7480);
  EXPECT_EQ(e->Authority(), "127.0.0.1:7480");
  e = ParseEndpoint("HTTPS://s3.eu-west-1.amazonaws.com/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->scheme, "https");
  EXPECT_EQ(e->Authority(), "s3.eu-west-1.amazonaws.com");
  e = ParseEndpoint("https://host:443/base/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Authority(), "host");  // the default port is not written
  EXPECT_EQ(e->base_path, "/base");
  e = ParseEndpoint("http://[::1]:9000");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->Authority(), "[::1]:9000");
  for (const char* bad : {"localhost:9000", "ftp://x", "http://", "http://h:99999", "http://h:x",
                          "http://user:pw@h"}) {
    EXPECT_EQ(ParseEndpoint(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace sluice::io

// libcurl loaded at run time (src/io/curl_api.h): the library resolves, a request goes
// through it, and a missing library or symbol becomes an error naming the fix.
#include "io/curl_api.h"

#include <gtest/gtest.h>

#include "sluice/io/http_engine.h"
#include "unit/http_test_server.h"

namespace sluice::io::internal {
namespace {

using sluice::testing::ScriptedHttpServer;

TEST(CurlApi, LoadsOnceAndEveryFunctionResolves) {
  Result<const CurlApi*> first = LoadCurl();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<const CurlApi*> second = LoadCurl();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(&Curl(), *first);
  CURL* easy = Curl().easy_init();
  ASSERT_NE(easy, nullptr);
  EXPECT_EQ(Curl().easy_setopt(easy, CURLOPT_URL, "http://127.0.0.1/"), CURLE_OK);
  Curl().easy_cleanup(easy);
  EXPECT_STREQ(Curl().easy_strerror(CURLE_OK), "No error");
}

TEST(CurlApi, RequestGoesThroughTheLoadedLibrary) {
  ScriptedHttpServer server([](const ScriptedHttpServer::Received& r) {
    ScriptedHttpServer::Reply reply;
    reply.body = "loaded " + r.target;
    return reply;
  });
  HttpEngine engine;
  HttpRequest request;
  request.url = server.Url("/lazy");
  Result<HttpResponse> r = engine.Call(request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "loaded /lazy");
}

TEST(CurlApi, MissingLibraryNamesItAndTheFix) {
  Result<CurlApi> r = ResolveCurlApi("libcurl-sluice-test-missing.so.4");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  const std::string m = r.status().message();
  EXPECT_NE(m.find("libcurl-sluice-test-missing.so.4 could not be loaded: "), std::string::npos)
      << m;
  EXPECT_NE(m.find("apt-get install libcurl4"), std::string::npos) << m;
}

TEST(CurlApi, LibraryWithoutCurlSymbolsNamesTheMissingSymbol) {
  Result<CurlApi> r = ResolveCurlApi("libz.so.1");  // loads, but is not libcurl
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("curl_global_init"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace sluice::io::internal

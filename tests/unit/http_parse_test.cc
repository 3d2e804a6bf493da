// ApplyHeaderLine and ParseContentRange: the pieces of HTTP responses sluice parses itself.
#include "io/http_parse.h"

#include <gtest/gtest.h>

namespace sluice::io {
namespace {

TEST(HttpParse, StatusLineStartsANewResponse) {
  HttpResponse r;
  ApplyHeaderLine("HTTP/1.1 100 Continue\r\n", &r);
  ApplyHeaderLine("X-Early: 1\r\n", &r);
  ApplyHeaderLine("HTTP/1.1 206 Partial Content\r\n", &r);
  ApplyHeaderLine("Content-Range:  bytes 0-9/100 \r\n", &r);
  EXPECT_EQ(r.status, 206);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "content-range");
  EXPECT_EQ(r.headers[0].second, "bytes 0-9/100");
}

TEST(HttpParse, LinesWithoutAHeaderNameAreIgnored) {
  HttpResponse r;
  ApplyHeaderLine("HTTP/1.1 200 OK\r\n", &r);
  for (const char* junk : {"\r\n", ": no name\r\n", "\r: name is a carriage return\r\n",
                           "\t : only blanks\r\n", "no colon at all\r\n"}) {
    ApplyHeaderLine(junk, &r);
  }
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.headers.empty());
}

TEST(HttpParse, MalformedStatusLineLeavesStatusZero) {
  HttpResponse r;
  ApplyHeaderLine("HTTP/1.1 2x6 Odd\r\n", &r);
  EXPECT_EQ(r.status, 0);
  ApplyHeaderLine("HTTP/1.1\r\n", &r);
  EXPECT_EQ(r.status, 0);
  ApplyHeaderLine("HTTP/1.1 -10 Negative\r\n", &r);
  EXPECT_EQ(r.status, 0);
  ApplyHeaderLine("HTTP/1.1 +20 Signed\r\n", &r);
  EXPECT_EQ(r.status, 0);
}

TEST(HttpParse, ContentRange) {
  ContentRange c;
  ASSERT_TRUE(ParseContentRange("bytes 100-199/1000", &c));
  EXPECT_EQ(c.first, 100u);
  EXPECT_EQ(c.last, 199u);
  EXPECT_EQ(c.total, 1000u);
  ASSERT_TRUE(ParseContentRange("bytes 0-0/*", &c));
  EXPECT_EQ(c.total, 0u);
  for (const char* bad : {"bytes 5-4/10", "bytes 0-10/10", "bytes -1/10", "bytes 1-/10",
                          "items 0-1/2", "bytes 0-1", "bytes 0/1-2", "bytes 0-1/x"}) {
    EXPECT_FALSE(ParseContentRange(bad, &c)) << bad;
  }
}

}  // namespace
}  // namespace sluice::io

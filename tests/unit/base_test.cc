#include <gtest/gtest.h>

#include "sluice/base/bytes.h"
#include "sluice/base/crc32c.h"
#include "sluice/base/status.h"

namespace sluice {
namespace {

TEST(Crc32c, StandardCheckValue) {
  // The CRC-32C check value from the iSCSI spec (RFC 3720 B.4) and every CRC catalogue.
  EXPECT_EQ(crc32c::Value("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c::Value(""), 0u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c::Value(ones), 0x62A8AB43u);
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s = "hello, sluice; a longer string to split at every position";
  for (size_t i = 0; i <= s.size(); ++i) {
    uint32_t a = crc32c::Value(s.data(), i);
    EXPECT_EQ(crc32c::Extend(a, s.data() + i, s.size() - i), crc32c::Value(s)) << i;
  }
}

TEST(Crc32c, MaskRoundTripAndDiffers) {
  for (uint32_t v : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_NE(crc32c::Mask(v), v);
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(v)), v);
  }
}

TEST(Status, CodesAndContext) {
  Status s = DataLoss("x.tfrecord: offset 12: payload CRC mismatch");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.ToString(), "DataLoss: x.tfrecord: offset 12: payload CRC mismatch");
  EXPECT_EQ(s.WithContext("read").message(), "read: x.tfrecord: offset 12: payload CRC mismatch");
  EXPECT_TRUE(Status::OK().ok());
  EXPECT_EQ(ErrnoStatus("open", "/nope", ENOENT).code(), StatusCode::kNotFound);
}

Result<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}
Status UseHalf(int x, int* out) {
  SLUICE_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::OK();
}

TEST(Result, ValueAndError) {
  int out = 0;
  EXPECT_TRUE(UseHalf(4, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = UseHalf(3, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(Bytes, FixedRoundTrip) {
  std::string s;
  PutFixed64(&s, 0x0102030405060708ull);
  PutFixed32(&s, 0xdeadbeef);
  ASSERT_EQ(s.size(), 12u);
  EXPECT_EQ(static_cast<uint8_t>(s[0]), 0x08);  // little endian
  EXPECT_EQ(DecodeFixed64(s.data()), 0x0102030405060708ull);
  EXPECT_EQ(DecodeFixed32(s.data() + 8), 0xdeadbeefu);
}

TEST(Bytes, ParseByteSize) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseByteSize("100MB", &v));
  EXPECT_EQ(v, 100'000'000u);
  EXPECT_TRUE(ParseByteSize("1MiB", &v));
  EXPECT_EQ(v, 1048576u);
  EXPECT_TRUE(ParseByteSize("1.5 KiB", &v));
  EXPECT_EQ(v, 1536u);
  EXPECT_TRUE(ParseByteSize("42", &v));
  EXPECT_EQ(v, 42u);
  EXPECT_FALSE(ParseByteSize("lots", &v));
  EXPECT_FALSE(ParseByteSize("-5MB", &v));
  EXPECT_FALSE(ParseByteSize("5 parsecs", &v));
}

}  // namespace
}  // namespace sluice

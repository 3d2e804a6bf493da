// Codec names and detection, TFRecord framing byte for byte, and CRC32C combination.
#include <gtest/gtest.h>

#include "format/framing.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/record_writer.h"

namespace sluice::format {
namespace {

// A bitwise CRC32C, independent of ISA-L, as the reference.
uint32_t ReferenceCrc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}

uint32_t ReferenceMask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

TEST(Codec, NamesExtensionsAndParsing) {
  for (Codec c : {Codec::kNone, Codec::kGzip, Codec::kZstd}) {
    auto parsed = ParseCodec(CodecName(c));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, c);
  }
  EXPECT_EQ(CodecExtension(Codec::kNone), "");
  EXPECT_EQ(CodecExtension(Codec::kGzip), ".gz");
  EXPECT_EQ(CodecExtension(Codec::kZstd), ".zst");
  EXPECT_EQ(ParseCodec("lz4").status().code(), StatusCode::kInvalidArgument);
}

TEST(Codec, DetectedFromMagicBytes) {
  EXPECT_EQ(DetectCodec(std::string("\x1f\x8b\x08\x00", 4)), Codec::kGzip);
  EXPECT_EQ(DetectCodec(std::string("\x28\xb5\x2f\xfd\x00", 5)), Codec::kZstd);
  EXPECT_EQ(DetectCodec("abcd"), Codec::kNone);
  EXPECT_EQ(DetectCodec(""), Codec::kNone);
  EXPECT_EQ(DetectCodec(std::string("\x28\xb5", 2)), Codec::kNone);
}

TEST(Codec, RecordWhoseLengthLooksLikeGzipIsUncompressed) {
  std::string stream;
  AppendFramedRecord(std::string(0x088B1F, 'x'), &stream);  // length bytes 1f 8b 08 00 ...
  ASSERT_EQ(stream.substr(0, 3), std::string("\x1f\x8b\x08", 3));
  EXPECT_EQ(DetectCodec(stream.substr(0, 12)), Codec::kNone);
}

TEST(Codec, DamagedMagicFallsBackToTheFileName) {
  EXPECT_EQ(DetectShardCodec("XXXXXXXXXXXX", "a.tfrecord.zst"), Codec::kZstd);
  EXPECT_EQ(DetectShardCodec("XXXXXXXXXXXX", "a.tfrecord.gz"), Codec::kGzip);
  EXPECT_EQ(DetectShardCodec("XXXXXXXXXXXX", "a.tfrecord"), Codec::kNone);
  std::string valid;
  AppendFramedRecord("payload", &valid);
  EXPECT_EQ(DetectShardCodec(valid.substr(0, 12), "a.tfrecord.zst"), Codec::kNone);
}

TEST(Framing, MatchesTFRecordByteForByte) {
  for (std::string payload : {std::string(), std::string("x"), std::string(1000, '\x7f')}) {
    std::string expected;
    std::string length(8, '\0');
    EncodeFixed64(length.data(), payload.size());
    expected += length;
    PutFixed32(&expected, ReferenceMask(ReferenceCrc32c(length)));
    expected += payload;
    PutFixed32(&expected, ReferenceMask(ReferenceCrc32c(payload)));
    std::string got;
    AppendFramedRecord(payload, &got);
    EXPECT_EQ(got, expected);
  }
}

TEST(Framing, HeaderChecks) {
  std::string rec;
  AppendFramedRecord("hello", &rec);
  uint64_t length = 0;
  EXPECT_EQ(CheckRecordHeader(rec.data(), 100, true, &length), HeaderCheck::kOk);
  EXPECT_EQ(length, 5u);
  EXPECT_TRUE(PayloadCrcMatches(rec.data() + 12, 5));
  EXPECT_EQ(CheckRecordHeader(rec.data(), 4, true, &length), HeaderCheck::kTooLong);
  rec[9] ^= 1;
  EXPECT_EQ(CheckRecordHeader(rec.data(), 100, true, &length), HeaderCheck::kLengthCrcMismatch);
  EXPECT_EQ(CheckRecordHeader(rec.data(), 100, false, &length), HeaderCheck::kOk);
  rec[13] ^= 1;
  EXPECT_FALSE(PayloadCrcMatches(rec.data() + 12, 5));
}

TEST(Crc32cCombine, EqualsTheCrcOfTheConcatenation) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data.push_back(static_cast<char>(i * 7 + (i >> 3)));
  for (size_t split : {0, 1, 7, 8, 100, 2500, 4999, 5000}) {
    uint32_t a = crc32c::Value(data.data(), split);
    uint32_t b = crc32c::Value(data.data() + split, data.size() - split);
    EXPECT_EQ(crc32c::Combine(a, b, data.size() - split), crc32c::Value(data)) << split;
  }
  // Long (virtual) lengths: combining with zeros equals extending with zeros.
  std::string zeros(1 << 20, '\0');
  uint32_t a = crc32c::Value("abc");
  EXPECT_EQ(crc32c::Combine(a, crc32c::Value(zeros), zeros.size()),
            crc32c::Extend(a, zeros.data(), zeros.size()));
}

}  // namespace
}  // namespace sluice::format

#include "sluice/vision/image_info.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>
#include <vector>

#include "unit/image_test_util.h"
#include "unit/vision_test_images.h"

namespace sluice::vision {
namespace {

using testing::MakeJpeg;
using testing::MakePng;

// Offset of the first chunk of `type` in a PNG (its length field).
size_t FindPngChunk(const std::string& png, const char* type) {
  size_t at = png.find(type);
  EXPECT_NE(at, std::string::npos);
  return at - 4;
}

void ExpectCode(const Result<ImageInfo>& r, StatusCode code) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
}

TEST(InspectImageTest, JpegSizeAndChannels) {
  for (bool full : {false, true}) {
    auto info = InspectImage(MakeJpeg(67, 45), full);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->format, ImageFormat::kJpeg);
    EXPECT_EQ(info->width, 67u);
    EXPECT_EQ(info->height, 45u);
    EXPECT_EQ(info->channels, 3u);
  }
}

TEST(InspectImageTest, GrayJpegHasOneChannel) {
  auto info = InspectImage(MakeJpeg(16, 16, /*gray=*/true), true);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->channels, 1u);
}

TEST(InspectImageTest, PngSizeAndChannels) {
  struct Case {
    png_uint_32 format;
    uint32_t channels;
  };
  for (Case c : {Case{PNG_FORMAT_GRAY, 1}, Case{PNG_FORMAT_RGB, 3}, Case{PNG_FORMAT_RGBA, 4}}) {
    auto info = InspectImage(MakePng(31, 20, c.format), true);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->format, ImageFormat::kPng);
    EXPECT_EQ(info->width, 31u);
    EXPECT_EQ(info->height, 20u);
    EXPECT_EQ(info->channels, c.channels);
  }
}

// A header libjpeg refuses (65535 exceeds its 65500-pixel dimension limit) must not leave the
// thread's decompressor mid-image: the valid JPEGs after it failed "two SOI markers".
TEST(InspectImageTest, OversizedSofDoesNotBreakTheNextJpegsOnThisThread) {
  const std::string good = MakeJpeg(40, 30);
  const std::string bad = testing::WithJpegSize(good, 65535, 65535);
  for (bool full : {false, true}) {
    Result<ImageInfo> refused = InspectImage(bad, full);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss) << refused.status().ToString();
    for (int i = 0; i < 3; ++i) {
      auto info = InspectImage(good, full);
      ASSERT_TRUE(info.ok()) << "image " << i << " after the bad one: " << info.status().ToString();
      EXPECT_EQ(info->width, 40u);
    }
  }
}

TEST(InspectImageTest, TruncatedJpegPassesHeaderFailsFullDecode) {
  std::string jpeg = MakeJpeg(128, 96);
  std::string truncated = jpeg.substr(0, jpeg.size() * 2 / 3);
  EXPECT_TRUE(InspectImage(truncated, false).ok());
  ExpectCode(InspectImage(truncated, true), StatusCode::kDataLoss);
}

TEST(InspectImageTest, JpegCutInsideHeaderIsDataLoss) {
  ExpectCode(InspectImage(MakeJpeg(32, 32).substr(0, 40), false), StatusCode::kDataLoss);
}

TEST(InspectImageTest, TruncatedPngFailsFullDecode) {
  std::string png = MakePng(64, 64, PNG_FORMAT_RGB);
  ExpectCode(InspectImage(png.substr(0, png.size() / 2), true), StatusCode::kDataLoss);
}

TEST(InspectImageTest, PngChecksumMismatchFailsFullDecode) {
  std::string png = MakePng(64, 64, PNG_FORMAT_RGB);
  size_t idat = FindPngChunk(png, "IDAT");
  png[idat + 8 + 10] ^= 0x40;  // a byte of compressed data: the chunk CRC no longer matches
  ExpectCode(InspectImage(png, true), StatusCode::kDataLoss);
}

TEST(InspectImageTest, JpegPixelBombRefusedFromHeader) {
  std::string jpeg = MakeJpeg(16, 16);
  size_t sof = jpeg.find("\xff\xc0");  // baseline SOF0: ff c0 len(2) precision(1) h(2) w(2)
  ASSERT_NE(sof, std::string::npos);
  for (size_t i : {sof + 5, sof + 7}) {  // 60000 x 60000 = 3.6 G pixels from a 1 KB file
    jpeg[i] = static_cast<char>(0xea);
    jpeg[i + 1] = static_cast<char>(0x60);
  }
  ExpectCode(InspectImage(jpeg, false), StatusCode::kResourceExhausted);
  ExpectCode(InspectImage(jpeg, true), StatusCode::kResourceExhausted);
}

TEST(InspectImageTest, PngPixelBombRefusedFromHeader) {
  std::string png = MakePng(16, 16, PNG_FORMAT_GRAY);
  size_t ihdr = FindPngChunk(png, "IHDR");
  for (size_t i : {ihdr + 8, ihdr + 12}) {  // width, height = 20000 (within libpng's limits)
    png[i] = 0, png[i + 1] = 0, png[i + 2] = 0x4e, png[i + 3] = 0x20;
  }
  uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(png.data() + ihdr + 4), 4 + 13);
  for (int k = 0; k < 4; ++k) png[ihdr + 8 + 13 + k] = static_cast<char>(crc >> (24 - 8 * k));
  ExpectCode(InspectImage(png, true), StatusCode::kResourceExhausted);
}

TEST(InspectImageTest, OtherBytesAreFormatOther) {
  auto info = InspectImage("this is a text file named cat.jpg\n", true);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->format, ImageFormat::kOther);
  EXPECT_EQ(info->width, 0u);
  EXPECT_EQ(ImageFormatName(info->format), "other");
}

TEST(InspectImageTest, EmptyInputIsFormatOther) {
  auto info = InspectImage("", true);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->format, ImageFormat::kOther);
}

// Random bytes, alone and behind a valid magic or a valid header, must give an error or
// kOther; never a crash, a hang or an OK JPEG/PNG.
TEST(InspectImageTest, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  const std::string jpeg = MakeJpeg(40, 30), png = MakePng(40, 30, PNG_FORMAT_RGB);
  const std::string prefixes[] = {"", "\xff\xd8\xff", std::string("\x89PNG\r\n\x1a\n", 8),
                                  jpeg.substr(0, 200), png.substr(0, 60)};
  for (int round = 0; round < 500; ++round) {
    std::string bytes = prefixes[round % 5];
    size_t n = rng() % 400;
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>(rng()));
    auto info = InspectImage(bytes, true);
    if (info.ok()) {
      EXPECT_EQ(info->format, ImageFormat::kOther) << "round " << round;
    }
  }
}

TEST(InspectImageTest, FlippedBytesNeverCrash) {
  std::mt19937 rng(11);
  const std::string images[] = {MakeJpeg(48, 32), MakePng(48, 32, PNG_FORMAT_RGBA)};
  for (int round = 0; round < 400; ++round) {
    std::string bytes = images[round % 2];
    for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    (void)InspectImage(bytes, true);  // any result is fine; finishing is the test
  }
}

}  // namespace
}  // namespace sluice::vision

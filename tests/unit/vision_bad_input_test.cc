// Bad images: every failure returns a Status naming what and where; nothing crashes, hangs or
// allocates what a forged header asks for.
#include <gtest/gtest.h>

#include <random>

#include "sluice/vision/decode.h"
#include "sluice/vision/transform.h"
#include "vision_test_images.h"

namespace sluice::vision {
namespace {

using testing::EncodeJpegRgb;
using testing::EncodePng;
using testing::FindMarker;
using testing::JpegSpec;
using testing::MakeRgb;
using testing::PngSpec;
using testing::WithJpegSize;

Status DecodeStatus(ByteView bytes, DecodeOptions options = {}) {
  ImageDecoder decoder(options);
  DecodedImage img;
  return decoder.DecodeAll(bytes, &img);
}

uint32_t Crc32(const char* data, size_t n) {  // PNG's CRC (ISO 3309), bitwise
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= static_cast<uint8_t>(data[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void PutBigEndian32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>(v >> (24 - 8 * i));
}

// Rewrites IHDR's width and height and re-seals its CRC, as a crafted bomb would.
std::string WithPngSize(std::string png, uint32_t width, uint32_t height) {
  // Signature (8), IHDR length (4), "IHDR" (4), width at 16, height at 20, CRC at 29.
  PutBigEndian32(&png, 16, width);
  PutBigEndian32(&png, 20, height);
  PutBigEndian32(&png, 29, Crc32(png.data() + 12, 17));
  return png;
}

// The pipeline's decoder is reused image after image: a header it refuses must not spoil
// the next images.
TEST(VisionBadInput, OversizedSofDoesNotBreakTheNextImagesOfTheDecoder) {
  const std::string good = EncodeJpegRgb(24, 16);
  ImageDecoder decoder;
  DecodedImage img;
  EXPECT_FALSE(decoder.DecodeAll(WithJpegSize(good, 65535, 65535), &img).ok());
  for (int i = 0; i < 3; ++i) {
    Status s = decoder.DecodeAll(good, &img);
    ASSERT_TRUE(s.ok()) << "image " << i << " after the bad one: " << s.ToString();
    EXPECT_EQ(img.width, 24u);
  }
}

TEST(VisionBadInput, ZeroSizeInput) {
  Status s = DecodeStatus("");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(DecodeStatus("\xFF\xD8\xFF").code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeStatus(std::string("\x89PNG\r\n\x1A\n", 8)).code(), StatusCode::kDataLoss);
}

TEST(VisionBadInput, UnsupportedFormatIsNamed) {
  Status s = DecodeStatus("GIF89a\x01\x00\x01\x00");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("GIF"), std::string::npos) << s.message();
  EXPECT_EQ(DecodeStatus("hello world").code(), StatusCode::kInvalidArgument);
}

TEST(VisionBadInput, TruncatedJpegNamesOffset) {
  const std::string jpeg = EncodeJpegRgb(120, 90);
  for (size_t keep : {jpeg.size() / 2, jpeg.size() - 2, size_t{40}}) {
    Status s = DecodeStatus(jpeg.substr(0, keep));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << keep;
    EXPECT_NE(s.message().find("JPEG at byte "), std::string::npos) << s.message();
  }
}

TEST(VisionBadInput, TruncatedProgressiveJpeg) {
  JpegSpec spec;
  spec.progressive = true;
  const std::string jpeg = EncodeJpegRgb(120, 90, spec);
  EXPECT_EQ(DecodeStatus(jpeg.substr(0, jpeg.size() * 2 / 3)).code(), StatusCode::kDataLoss);
}

TEST(VisionBadInput, UnexpectedMarkerInScanData) {
  std::string jpeg = EncodeJpegRgb(120, 90);
  const size_t sos = FindMarker(jpeg, 0xDA);
  ASSERT_NE(sos, std::string::npos);
  const size_t mid = (sos + jpeg.size()) / 2;
  jpeg[mid] = static_cast<char>(0xFF);
  jpeg[mid + 1] = static_cast<char>(0xD3);  // a restart marker where none belongs
  Status s = DecodeStatus(jpeg);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
}

TEST(VisionBadInput, CorruptHuffmanTable) {
  std::string jpeg = EncodeJpegRgb(64, 64);
  const size_t dht = FindMarker(jpeg, 0xC4);
  ASSERT_NE(dht, std::string::npos);
  for (int i = 0; i < 16; ++i) jpeg[dht + 5 + i] = static_cast<char>(0xFF);  // code counts
  EXPECT_EQ(DecodeStatus(jpeg).code(), StatusCode::kDataLoss);
}

TEST(VisionBadInput, RandomByteCorruptionNeverCrashes) {
  // Whatever libjpeg/libpng make of a damaged file, the decoder returns a Status; ASan and
  // UBSan runs of this test check there is no memory error on the way.
  const std::string jpeg = EncodeJpegRgb(80, 60);
  const std::string png = EncodePng(MakeRgb(16, 12), PngSpec{});
  std::mt19937 gen(7);
  for (const std::string* original : {&jpeg, &png}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::string damaged = *original;
      const int flips = 1 + trial % 4;
      for (int f = 0; f < flips; ++f) {
        damaged[gen() % damaged.size()] = static_cast<char>(gen());
      }
      ImageDecoder decoder;
      DecodedImage img;
      Status s = decoder.DecodeAll(damaged, &img);
      if (s.ok()) {
        EXPECT_GT(img.width, 0u);
      } else {
        EXPECT_FALSE(s.message().empty());
      }
    }
  }
}

TEST(VisionBadInput, JpegBombHeaderRefusedBeforeAllocating) {
  // 65000 x 65000 = 4.2 G pixels promised by a few hundred bytes.
  const std::string bomb = WithJpegSize(EncodeJpegRgb(16, 16), 65000, 65000);
  Status s = DecodeStatus(bomb);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("max_pixels"), std::string::npos) << s.message();
}

TEST(VisionBadInput, JpegLargeHeaderWithTinyDataFailsFast) {
  // Under the cap but far more pixels than data: truncation is detected, not padded.
  const std::string fake = WithJpegSize(EncodeJpegRgb(16, 16), 4000, 3000);
  EXPECT_EQ(DecodeStatus(fake).code(), StatusCode::kDataLoss);
}

TEST(VisionBadInput, PngBombHeaderRefusedBeforeAllocating) {
  const std::string bomb = WithPngSize(EncodePng(MakeRgb(16, 12), PngSpec{}), 60000, 60000);
  Status s = DecodeStatus(bomb);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
}

TEST(VisionBadInput, PngLargeHeaderWithTinyDataFails) {
  const std::string fake = WithPngSize(EncodePng(MakeRgb(16, 12), PngSpec{}), 3000, 2000);
  EXPECT_EQ(DecodeStatus(fake).code(), StatusCode::kDataLoss);
}

TEST(VisionBadInput, TruncatedPngNamesOffset) {
  const std::string png = EncodePng(MakeRgb(16, 12), PngSpec{});
  Status s = DecodeStatus(png.substr(0, png.size() - 20));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("PNG at byte "), std::string::npos) << s.message();
}

TEST(VisionBadInput, PngChecksumMismatch) {
  std::string png = EncodePng(MakeRgb(16, 12), PngSpec{});
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  png[idat + 6] ^= 0x01;  // inside the compressed data: the chunk CRC no longer matches
  EXPECT_EQ(DecodeStatus(png).code(), StatusCode::kDataLoss);
}

TEST(VisionBadInput, PixelCap) {
  DecodeOptions options;
  options.max_pixels = 100;
  EXPECT_EQ(DecodeStatus(EncodeJpegRgb(20, 20), options).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(DecodeStatus(EncodePng(MakeRgb(16, 12), PngSpec{}), options).code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(DecodeStatus(EncodeJpegRgb(10, 10), options).ok());
}

TEST(VisionBadInput, DecodedBytesCap) {
  DecodeOptions options;
  options.max_decoded_bytes = 1000;
  Status s = DecodeStatus(EncodeJpegRgb(100, 100), options);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("max_decoded_bytes"), std::string::npos);
  JpegSpec spec;
  spec.progressive = true;
  EXPECT_EQ(DecodeStatus(EncodeJpegRgb(100, 100, spec), options).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(DecodeStatus(EncodePng(MakeRgb(16, 12), PngSpec{}), options).code(),
            StatusCode::kOk);  // 16 * 12 * 3 + one row fits
}

TEST(VisionBadInput, ScanLimitStopsProgressiveBombs) {
  JpegSpec spec;
  spec.progressive = true;  // jpeg_simple_progression: 10 scans for YCbCr
  const std::string jpeg = EncodeJpegRgb(64, 64, spec);
  DecodeOptions options;
  options.max_scans = 3;
  Status s = DecodeStatus(jpeg, options);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("max_scans"), std::string::npos) << s.ToString();
  EXPECT_TRUE(DecodeStatus(jpeg).ok());
}

TEST(VisionBadInput, TransformPropagatesDecodeErrors) {
  auto t = ImageTransform::Make({RandomResizedCrop{}}, OutputSpec{});
  ASSERT_TRUE(t.ok());
  std::vector<uint8_t> out(t->output_bytes());
  DecodeScratch scratch;
  SampleRng rng(1);
  const std::string jpeg = EncodeJpegRgb(300, 200);
  EXPECT_EQ(t->Apply(jpeg.substr(0, 100), rng, out.data(), &scratch).code(), StatusCode::kDataLoss);
  EXPECT_EQ(t->Apply("GIF89a", rng, out.data(), &scratch).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(t->Apply(jpeg, rng, out.data(), &scratch).ok());  // the scratch still works
}

}  // namespace
}  // namespace sluice::vision

// ImageDecoder: formats, colour conversions, region and DCT-scaled decoding, and every way
// bad input must fail (with a message, never a crash).
#include <gtest/gtest.h>

#include <cstring>

#include "sluice/vision/decode.h"
#include "vision_test_images.h"

namespace sluice::vision {
namespace {

using testing::EncodeJpeg;
using testing::EncodeJpegRgb;
using testing::EncodePng;
using testing::JpegSpec;
using testing::MakeRgb;
using testing::MeanAbsDiff;
using testing::PngSpec;

// The decoded region as packed rows (drops the stride).
std::vector<uint8_t> Packed(const DecodedImage& img) {
  std::vector<uint8_t> out(size_t{img.width} * img.height * 3);
  for (uint32_t r = 0; r < img.height; ++r) {
    std::memcpy(&out[size_t{r} * img.width * 3], img.row(r), size_t{img.width} * 3);
  }
  return out;
}

TEST(VisionDecode, DetectsFormats) {
  EXPECT_EQ(DetectImageFormat(EncodeJpegRgb(8, 8)), ImageFormat::kJpeg);
  EXPECT_EQ(DetectImageFormat(EncodePng(MakeRgb(16, 12), PngSpec{})), ImageFormat::kPng);
  EXPECT_EQ(DetectImageFormat("GIF89a"), ImageFormat::kOther);
  EXPECT_EQ(DetectImageFormat(""), ImageFormat::kOther);
}

TEST(VisionDecode, JpegRgbCloseToSource) {
  const auto rgb = MakeRgb(97, 61);  // odd sizes: partial MCUs on both edges
  JpegSpec spec;
  spec.width = 97;
  spec.height = 61;
  spec.quality = 98;
  spec.h_samp = spec.v_samp = 1;
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_TRUE(decoder.DecodeAll(EncodeJpeg(rgb, spec), &img).ok());
  ASSERT_EQ(img.width, 97u);
  ASSERT_EQ(img.height, 61u);
  EXPECT_LT(MeanAbsDiff(Packed(img).data(), rgb.data(), rgb.size()), 2.0);
}

TEST(VisionDecode, JpegGrayscaleBecomesEqualRgb) {
  std::vector<uint8_t> gray(40 * 30);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<uint8_t>(i * 7);
  JpegSpec spec;
  spec.width = 40;
  spec.height = 30;
  spec.components = 1;
  ImageDecoder decoder;
  const std::string jpeg = EncodeJpeg(gray, spec);  // must outlive Decode
  auto header = decoder.Open(jpeg);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->channels, 1u);
  DecodedImage img;
  ASSERT_TRUE(decoder.Decode({}, &img).ok());
  for (uint32_t y = 0; y < img.height; ++y) {
    for (uint32_t x = 0; x < img.width; ++x) {
      const uint8_t* p = img.row(y) + 3 * x;
      ASSERT_EQ(p[0], p[1]);
      ASSERT_EQ(p[1], p[2]);
    }
  }
}

TEST(VisionDecode, JpegCmykBecomesRgbLikePillow) {
  // Uniform patches survive JPEG exactly enough to check the CMYK -> RGB rule: libjpeg
  // writes CMYK as given; we read it back Adobe-inverted, as Pillow does:
  // R = K' - K' * (255 - C') / 255 with C', K' the stored values.
  const uint8_t stored[4] = {200, 100, 50, 180};
  std::vector<uint8_t> cmyk(32 * 32 * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = stored[i % 4];
  JpegSpec spec;
  spec.width = spec.height = 32;
  spec.components = 4;
  spec.quality = 100;
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_TRUE(decoder.DecodeAll(EncodeJpeg(cmyk, spec), &img).ok());
  for (int c = 0; c < 3; ++c) {
    const double expected = stored[3] - stored[3] * (255.0 - stored[c]) / 255.0;
    EXPECT_NEAR(img.row(16)[16 * 3 + c], expected, 2.0) << c;
  }
}

TEST(VisionDecode, RegionEqualsFullDecodeCrop) {
  // jpeg_crop_scanline + jpeg_skip_scanlines must not change pixels: compare a region decode
  // with the same window of a full decode, for each chroma subsampling and scale.
  for (auto [h, v] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{2, 2}}) {
    for (bool progressive : {false, true}) {
      JpegSpec spec;
      spec.h_samp = h;
      spec.v_samp = v;
      spec.progressive = progressive;
      const std::string jpeg = EncodeJpegRgb(301, 203, spec);
      for (uint32_t denom : {1u, 2u, 8u}) {
        ImageDecoder full_decoder, region_decoder;
        ASSERT_TRUE(full_decoder.Open(jpeg).ok());
        DecodedImage full;
        ASSERT_TRUE(full_decoder.Decode(DecodeRequest{denom}, &full).ok());
        const uint32_t x = full.full_width / 3 + 1, y = full.full_height / 4 + 1;
        const uint32_t w = full.full_width / 3, hgt = full.full_height / 2;
        ASSERT_TRUE(region_decoder.Open(jpeg).ok());
        DecodedImage part;
        ASSERT_TRUE(region_decoder.Decode(DecodeRequest{denom, x, y, w, hgt}, &part).ok());
        ASSERT_LE(part.x, x);
        ASSERT_GE(part.x + part.width, x + w);
        ASSERT_EQ(part.y, y);
        ASSERT_EQ(part.height, hgt);
        // Skip the two outermost columns, which libjpeg upsamples as image edges.
        int worst = 0;
        for (uint32_t r = 0; r < hgt; ++r) {
          for (uint32_t c = part.x + 2; c + 2 < part.x + part.width; ++c) {
            for (int k = 0; k < 3; ++k) {
              int a = part.row(r)[(c - part.x) * 3 + k];
              int b = full.row(y + r)[c * 3 + k];
              worst = std::max(worst, std::abs(a - b));
            }
          }
        }
        EXPECT_EQ(worst, 0) << "sampling " << h << "x" << v << " progressive " << progressive
                            << " denom " << denom;
      }
    }
  }
}

TEST(VisionDecode, DctScalingHalvesDimensionsRoundingUp) {
  const std::string jpeg = EncodeJpegRgb(301, 203);
  ImageDecoder decoder;
  for (uint32_t denom : {1u, 2u, 4u, 8u}) {
    ASSERT_TRUE(decoder.Open(jpeg).ok());
    DecodedImage img;
    ASSERT_TRUE(decoder.Decode(DecodeRequest{denom}, &img).ok());
    EXPECT_EQ(img.full_width, (301 + denom - 1) / denom);
    EXPECT_EQ(img.full_height, (203 + denom - 1) / denom);
  }
  ASSERT_TRUE(decoder.Open(jpeg).ok());
  DecodedImage img;
  EXPECT_EQ(decoder.Decode(DecodeRequest{3}, &img).code(), StatusCode::kInvalidArgument);
}

TEST(VisionDecode, DecodeWithoutOpenFails) {
  ImageDecoder decoder;
  DecodedImage img;
  EXPECT_EQ(decoder.Decode({}, &img).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(decoder.DecodeAll(EncodeJpegRgb(16, 16), &img).ok());
  EXPECT_EQ(decoder.Decode({}, &img).code(), StatusCode::kFailedPrecondition);  // used up
}

TEST(VisionDecode, DecoderIsReusableAfterErrors) {
  ImageDecoder decoder;
  const std::string good = EncodeJpegRgb(50, 40);
  std::string bad = good.substr(0, good.size() / 2);
  DecodedImage img;
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(decoder.DecodeAll(bad, &img).ok());
    ASSERT_TRUE(decoder.DecodeAll(good, &img).ok());
    EXPECT_EQ(img.width, 50u);
  }
}

// ---- PNG ----

TEST(VisionDecode, PngRgbExact) {
  const auto rgb = MakeRgb(33, 21);
  PngSpec spec;
  spec.width = 33;
  spec.height = 21;
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_TRUE(decoder.DecodeAll(EncodePng(rgb, spec), &img).ok());
  EXPECT_EQ(Packed(img), rgb);
}

TEST(VisionDecode, PngInterlacedEqualsPlain) {
  const auto rgb = MakeRgb(33, 21);
  PngSpec spec;
  spec.width = 33;
  spec.height = 21;
  spec.interlaced = true;
  ImageDecoder decoder;
  const std::string png = EncodePng(rgb, spec);  // must outlive Decode
  ASSERT_TRUE(decoder.Open(png).ok());
  DecodedImage img;
  Status s = decoder.Decode(DecodeRequest{1, 5, 3, 20, 10}, &img);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(img.width, 20u);
  for (uint32_t r = 0; r < 10; ++r) {
    ASSERT_EQ(std::memcmp(img.row(r), &rgb[((3 + r) * 33 + 5) * 3], 60), 0) << r;
  }
}

TEST(VisionDecode, PngRegion) {
  const auto rgb = MakeRgb(33, 21);
  PngSpec spec;
  spec.width = 33;
  spec.height = 21;
  ImageDecoder decoder;
  const std::string png = EncodePng(rgb, spec);  // must outlive Decode
  ASSERT_TRUE(decoder.Open(png).ok());
  DecodedImage img;
  ASSERT_TRUE(decoder.Decode(DecodeRequest{1, 7, 4, 10, 9}, &img).ok());
  EXPECT_EQ(img.x, 7u);
  EXPECT_EQ(img.y, 4u);
  for (uint32_t r = 0; r < 9; ++r) {
    ASSERT_EQ(std::memcmp(img.row(r), &rgb[((4 + r) * 33 + 7) * 3], 30), 0) << r;
  }
}

TEST(VisionDecode, PngPaletteWithTransparencyBecomesRgb) {
  PngSpec spec;
  spec.width = 4;
  spec.height = 2;
  spec.color_type = PNG_COLOR_TYPE_PALETTE;
  spec.palette = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
  spec.transparency = {0, 128};  // alpha is dropped, not composited (Pillow's convert)
  const std::vector<uint8_t> indices = {0, 1, 2, 3, 3, 2, 1, 0};
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_TRUE(decoder.DecodeAll(EncodePng(indices, spec), &img).ok());
  for (size_t i = 0; i < indices.size(); ++i) {
    const png_color& c = spec.palette[indices[i]];
    const uint8_t* p = img.row(static_cast<uint32_t>(i / 4)) + (i % 4) * 3;
    EXPECT_EQ(p[0], c.red);
    EXPECT_EQ(p[1], c.green);
    EXPECT_EQ(p[2], c.blue);
  }
}

TEST(VisionDecode, PngLowBitGrayExpandsToFullRange) {
  PngSpec spec;
  spec.width = 8;
  spec.height = 1;
  spec.color_type = PNG_COLOR_TYPE_GRAY;
  spec.bit_depth = 1;
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_TRUE(decoder.DecodeAll(EncodePng({0b10100000}, spec), &img).ok());
  EXPECT_EQ(img.row(0)[0], 255);
  EXPECT_EQ(img.row(0)[3], 0);
  EXPECT_EQ(img.row(0)[6], 255);
  EXPECT_EQ(img.row(0)[9], 0);
}

TEST(VisionDecode, Png16BitKeepsHighByte) {
  PngSpec spec;
  spec.width = 2;
  spec.height = 1;
  spec.bit_depth = 16;
  const std::vector<uint8_t> raw = {0x12, 0x34, 0xAB, 0xCD, 0xFF, 0xFF,
                                    0x00, 0x01, 0x80, 0x00, 0x7F, 0xFF};
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_TRUE(decoder.DecodeAll(EncodePng(raw, spec), &img).ok());
  const uint8_t expected[6] = {0x12, 0xAB, 0xFF, 0x00, 0x80, 0x7F};
  EXPECT_EQ(std::memcmp(img.row(0), expected, 6), 0);

  spec.color_type = PNG_COLOR_TYPE_GRAY;  // 16-bit gray
  ASSERT_TRUE(decoder.DecodeAll(EncodePng({0xAB, 0xCD, 0x01, 0x02}, spec), &img).ok());
  const uint8_t gray[6] = {0xAB, 0xAB, 0xAB, 0x01, 0x01, 0x01};
  EXPECT_EQ(std::memcmp(img.row(0), gray, 6), 0);
}

TEST(VisionDecode, PngAlphaDropped) {
  PngSpec spec;
  spec.width = 2;
  spec.height = 1;
  spec.color_type = PNG_COLOR_TYPE_RGB_ALPHA;
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_TRUE(decoder.DecodeAll(EncodePng({1, 2, 3, 0, 4, 5, 6, 255}, spec), &img).ok());
  const uint8_t rgb[6] = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(std::memcmp(img.row(0), rgb, 6), 0);

  spec.color_type = PNG_COLOR_TYPE_GRAY_ALPHA;
  ASSERT_TRUE(decoder.DecodeAll(EncodePng({9, 0, 200, 7}, spec), &img).ok());
  const uint8_t gray[6] = {9, 9, 9, 200, 200, 200};
  EXPECT_EQ(std::memcmp(img.row(0), gray, 6), 0);
}

}  // namespace
}  // namespace sluice::vision

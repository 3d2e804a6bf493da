// ImageTransform: validation, output dtypes and layouts, flips, normalisation, padding and
// DCT scaling, end to end from encoded bytes.
#include <gtest/gtest.h>

#include <cstring>

#include "sluice/vision/transform.h"
#include "vision/slot_writer.h"
#include "vision_test_images.h"

namespace sluice::vision {
namespace {

using testing::EncodeJpegRgb;
using testing::EncodePng;
using testing::MakeRgb;
using testing::MeanAbsDiff;
using testing::PngSpec;

const Normalize kImageNet{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};

std::string SolidPng(uint32_t w, uint32_t h, const uint8_t rgb[3]) {
  std::vector<uint8_t> px(size_t{w} * h * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = rgb[i % 3];
  PngSpec spec;
  spec.width = w;
  spec.height = h;
  return EncodePng(px, spec);
}

template <typename T>
std::vector<T> ApplyTo(const ImageTransform& t, ByteView bytes, uint64_t key,
                       DecodeScratch* scratch) {
  std::vector<T> out(t.output_bytes() / sizeof(T));
  SampleRng rng(key);
  Status s = t.Apply(bytes, rng, out.data(), scratch);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST(ImageTransformMake, OutputSizeMustNotDependOnTheImage) {
  EXPECT_EQ(ImageTransform::Make({Resize{256}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ImageTransform::Make({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ImageTransform::Make({Resize{256}, CenterCrop{224, 224}}).ok());
  EXPECT_TRUE(ImageTransform::Make({Resize{0, 32, 48}}).ok());
}

TEST(ImageTransformMake, OutputDTypeIsAnImageDType) {
  for (DType d : {DType::kUInt8, DType::kFloat16, DType::kFloat32}) {
    EXPECT_TRUE(ImageTransform::Make({CenterCrop{8, 8}}, OutputSpec{d, Layout::kNCHW}).ok());
    EXPECT_EQ(ParseImageDType(DTypeName(d)).value(), d);
  }
  for (DType d : {DType::kInt32, DType::kInt64, DType::kString}) {
    Result<ImageTransform> t = ImageTransform::Make({CenterCrop{8, 8}}, OutputSpec{d});
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(DTypeName(d)), std::string::npos) << t.status().ToString();
    EXPECT_EQ(ParseImageDType(DTypeName(d)).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ImageTransformMake, RejectsBadParameters) {
  RandomResizedCrop zero_scale;
  zero_scale.scale_min = 0;
  RandomResizedCrop inverted_ratio;
  inverted_ratio.ratio_min = 2;
  inverted_ratio.ratio_max = 1;
  RandomHorizontalFlip bad_p;
  bad_p.p = 1.5;
  Normalize zero_std;
  zero_std.std = {1, 0, 1};
  for (const Op& op :
       std::vector<Op>{zero_scale, inverted_ratio, bad_p, zero_std, CenterCrop{0, 10}, Resize{}}) {
    auto t = ImageTransform::Make({op, CenterCrop{8, 8}});
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << OpToString(op);
  }
}

TEST(ImageTransformMake, NormalizeNeedsFloatOutput) {
  auto t = ImageTransform::Make({RandomResizedCrop{}, kImageNet}, {DType::kUInt8, Layout::kNHWC});
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(ImageTransformMake, ShapeAndBytes) {
  auto nchw = ImageTransform::Make({RandomResizedCrop{}}, {DType::kFloat32, Layout::kNCHW});
  ASSERT_TRUE(nchw.ok());
  EXPECT_EQ(nchw->output_shape(), (std::array<uint32_t, 3>{3, 224, 224}));
  EXPECT_EQ(nchw->output_bytes(), 3u * 224 * 224 * 4);
  auto nhwc = ImageTransform::Make({CenterCrop{100, 120}}, {DType::kFloat16, Layout::kNHWC});
  ASSERT_TRUE(nhwc.ok());
  EXPECT_EQ(nhwc->output_shape(), (std::array<uint32_t, 3>{100, 120, 3}));
  EXPECT_EQ(nhwc->output_bytes(), 100u * 120 * 3 * 2);
}

TEST(ImageTransform, SolidImageNormalizesExactly) {
  const uint8_t color[3] = {10, 128, 250};
  auto t = ImageTransform::Make({RandomResizedCrop{32, 32}, kImageNet});
  ASSERT_TRUE(t.ok());
  DecodeScratch scratch;
  auto out = ApplyTo<float>(*t, SolidPng(90, 70, color), 5, &scratch);
  for (int c = 0; c < 3; ++c) {
    const float expected = (color[c] / 255.0f - kImageNet.mean[c]) / kImageNet.std[c];
    for (size_t i = 0; i < 32 * 32; ++i) ASSERT_NEAR(out[c * 32 * 32 + i], expected, 1e-4) << c;
  }
}

TEST(ImageTransform, LayoutsAreTransposes) {
  const std::string jpeg = EncodeJpegRgb(300, 200);
  auto nchw = ImageTransform::Make({RandomResizedCrop{40, 50}, kImageNet},
                                   {DType::kFloat32, Layout::kNCHW});
  auto nhwc = ImageTransform::Make({RandomResizedCrop{40, 50}, kImageNet},
                                   {DType::kFloat32, Layout::kNHWC});
  ASSERT_TRUE(nchw.ok() && nhwc.ok());
  DecodeScratch scratch;
  auto a = ApplyTo<float>(*nchw, jpeg, 77, &scratch);
  auto b = ApplyTo<float>(*nhwc, jpeg, 77, &scratch);
  for (size_t y = 0; y < 40; ++y) {
    for (size_t x = 0; x < 50; ++x) {
      for (size_t c = 0; c < 3; ++c) {
        ASSERT_EQ(a[(c * 40 + y) * 50 + x], b[(y * 50 + x) * 3 + c]);
      }
    }
  }
}

TEST(ImageTransform, EveryWidthAndFlipAgreesAcrossLayouts) {
  // The row kernels work 8 pixels at a time with a scalar tail, and mirror when flipping:
  // widths around multiples of 8, flipped and not, NCHW against flipped-back NHWC.
  const std::string jpeg = EncodeJpegRgb(120, 90);
  RandomHorizontalFlip always;
  always.p = 1;
  for (uint32_t w : {1u, 7u, 8u, 9u, 16u, 23u, 61u}) {
    for (bool flip : {false, true}) {
      std::vector<Op> ops = {Resize{0, 5, w}, kImageNet};
      if (flip) ops.push_back(always);
      auto nchw = ImageTransform::Make(ops, {DType::kFloat32, Layout::kNCHW});
      auto plain =
          ImageTransform::Make({Resize{0, 5, w}, kImageNet}, {DType::kFloat32, Layout::kNHWC});
      ASSERT_TRUE(nchw.ok() && plain.ok());
      DecodeScratch scratch;
      auto a = ApplyTo<float>(*nchw, jpeg, 5, &scratch);
      auto b = ApplyTo<float>(*plain, jpeg, 5, &scratch);
      for (size_t y = 0; y < 5; ++y) {
        for (size_t x = 0; x < w; ++x) {
          const size_t src = flip ? w - 1 - x : x;
          for (size_t c = 0; c < 3; ++c) {
            ASSERT_EQ(a[(c * 5 + y) * w + x], b[(y * w + src) * 3 + c])
                << "width " << w << " flip " << flip << " at " << x << "," << y << "," << c;
          }
        }
      }
    }
  }
}

TEST(ImageTransform, AlignedAndUnalignedSlotsGetTheSameValues) {
  // float32 NCHW slots starting on a 32-byte boundary are streamed straight from the
  // transposes; others go through a row buffer. Both, flipped and not, with and without a
  // padded (CenterCrop) canvas, must hold the same values.
  const std::string jpeg = EncodeJpegRgb(300, 200);
  RandomHorizontalFlip always;
  always.p = 1;
  for (auto ops : {std::vector<Op>{RandomResizedCrop{48, 64}, kImageNet},
                   std::vector<Op>{RandomResizedCrop{48, 64}, always, kImageNet},
                   std::vector<Op>{Resize{40}, CenterCrop{48, 64}, kImageNet}}) {
    auto t = ImageTransform::Make(ops, {DType::kFloat32, Layout::kNCHW});
    ASSERT_TRUE(t.ok());
    const size_t n = t->output_bytes() / sizeof(float);
    std::vector<float> storage(n + 16);
    float* aligned = storage.data();
    while (reinterpret_cast<uintptr_t>(aligned) % 32 != 0) ++aligned;
    float* unaligned = aligned + 1;
    DecodeScratch scratch;
    SampleRng rng_a(9), rng_b(9);
    ASSERT_TRUE(t->Apply(jpeg, rng_a, aligned, &scratch).ok());
    std::vector<float> a(aligned, aligned + n);
    ASSERT_TRUE(t->Apply(jpeg, rng_b, unaligned, &scratch).ok());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], unaligned[i]) << i;
  }
}

TEST(ImageTransform, DTypesAgree) {
  const std::string jpeg = EncodeJpegRgb(300, 200);
  const std::vector<Op> ops = {RandomResizedCrop{64, 64}};
  auto f32 = ImageTransform::Make(ops, {DType::kFloat32, Layout::kNHWC});
  auto f16 = ImageTransform::Make(ops, {DType::kFloat16, Layout::kNHWC});
  auto u8 = ImageTransform::Make(ops, {DType::kUInt8, Layout::kNHWC});
  ASSERT_TRUE(f32.ok() && f16.ok() && u8.ok());
  DecodeScratch scratch;
  auto a = ApplyTo<float>(*f32, jpeg, 3, &scratch);
  auto h = ApplyTo<uint16_t>(*f16, jpeg, 3, &scratch);
  auto b = ApplyTo<uint8_t>(*u8, jpeg, 3, &scratch);
  std::vector<float> a_as_half(a.size());
  std::vector<uint16_t> expected_halves(a.size());
  internal::FloatsToHalves(a.data(), expected_halves.data(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_GE(a[i], 0.0f);
    ASSERT_LE(a[i], 1.0f);
    ASSERT_EQ(h[i], expected_halves[i]) << i;
    ASSERT_NEAR(b[i], a[i] * 255.0f, 0.5001f) << i;
  }
}

TEST(ImageTransform, HalfConversionRoundsToNearestEven) {
  const float in[] = {0.0f,     -0.0f, 1.0f,           -2.5f, 65504.0f,
                      65520.0f, 1e-8f, 5.96046448e-8f, 0.1f,  1.0009765625f + 0.00048828125f,
                      3.0e-5f,  1e9f};
  const uint16_t expected[] = {0x0000, 0x8000, 0x3C00, 0xC100, 0x7BFF, 0x7C00,
                               0x0000, 0x0001, 0x2E66, 0x3C02, 0x01F7, 0x7C00};
  uint16_t out[std::size(in)];
  internal::FloatsToHalves(in, out, std::size(in));  // the vector path for the first 8
  for (size_t i = 0; i < std::size(in); ++i) EXPECT_EQ(out[i], expected[i]) << in[i];
  for (size_t i = 0; i < std::size(in); ++i) {
    internal::FloatsToHalves(&in[i], &out[i], 1);  // the scalar path
    EXPECT_EQ(out[i], expected[i]) << in[i];
  }
}

TEST(ImageTransform, FlipMirrorsTheOutput) {
  const std::string jpeg = EncodeJpegRgb(120, 90);
  RandomHorizontalFlip always;
  always.p = 1;
  auto plain = ImageTransform::Make({Resize{0, 45, 60}}, {DType::kFloat32, Layout::kNHWC});
  auto flipped =
      ImageTransform::Make({Resize{0, 45, 60}, always}, {DType::kFloat32, Layout::kNHWC});
  ASSERT_TRUE(plain.ok() && flipped.ok());
  DecodeScratch scratch;
  auto a = ApplyTo<float>(*plain, jpeg, 1, &scratch);
  auto b = ApplyTo<float>(*flipped, jpeg, 1, &scratch);
  for (size_t y = 0; y < 45; ++y) {
    for (size_t x = 0; x < 60; ++x) {
      for (size_t c = 0; c < 3; ++c) {
        ASSERT_EQ(a[(y * 60 + x) * 3 + c], b[(y * 60 + 59 - x) * 3 + c]);
      }
    }
  }
}

TEST(ImageTransform, IdentityResizeIsExact) {
  const auto rgb = MakeRgb(64, 48);
  PngSpec spec;
  spec.width = 64;
  spec.height = 48;
  auto t = ImageTransform::Make({Resize{0, 48, 64}}, {DType::kUInt8, Layout::kNHWC});
  ASSERT_TRUE(t.ok());
  DecodeScratch scratch;
  EXPECT_EQ(ApplyTo<uint8_t>(*t, EncodePng(rgb, spec), 0, &scratch), rgb);
}

TEST(ImageTransform, CenterCropPadsWithNormalizedZero) {
  const uint8_t color[3] = {200, 100, 50};
  const std::string png = SolidPng(100, 50, color);
  DecodeScratch scratch;
  for (bool normalize_first : {false, true}) {
    std::vector<Op> ops = {CenterCrop{80, 120}};
    ops.insert(normalize_first ? ops.begin() : ops.end(), kImageNet);
    auto t = ImageTransform::Make(ops, {DType::kFloat32, Layout::kNCHW});
    ASSERT_TRUE(t.ok());
    auto out = ApplyTo<float>(*t, png, 0, &scratch);
    for (int c = 0; c < 3; ++c) {
      const float pad = normalize_first ? 0.0f : (0.0f - kImageNet.mean[c]) / kImageNet.std[c];
      const float inside = (color[c] / 255.0f - kImageNet.mean[c]) / kImageNet.std[c];
      EXPECT_NEAR(out[(c * 80 + 0) * 120 + 0], pad, 1e-5);       // top-left corner
      EXPECT_NEAR(out[(c * 80 + 40) * 120 + 5], pad, 1e-5);      // left band
      EXPECT_NEAR(out[(c * 80 + 40) * 120 + 60], inside, 1e-4);  // centre
      EXPECT_NEAR(out[(c * 80 + 79) * 120 + 119], pad, 1e-5);    // bottom-right corner
    }
  }
}

TEST(ImageTransform, DctScalingStaysCloseToFullDecode) {
  // 1600x1200 -> 200x150: the 1/8 scale applies. On photo-like content the 1/8 decode
  // (block means) resized stays within Pillow's tolerance of resizing the full decode;
  // tests/python/test_vision_pil.py checks the same on real photos against Pillow itself.
  testing::JpegSpec spec;
  spec.width = 1600;
  spec.height = 1200;
  const std::string jpeg = testing::EncodeJpeg(testing::MakeSmoothRgb(1600, 1200), spec);
  TransformOptions no_dct;
  no_dct.dct_scaling = false;
  auto fast = ImageTransform::Make({Resize{0, 150, 200}}, {DType::kUInt8, Layout::kNHWC});
  auto exact = ImageTransform::Make({Resize{0, 150, 200}}, {DType::kUInt8, Layout::kNHWC}, no_dct);
  ASSERT_TRUE(fast.ok() && exact.ok());
  DecodeScratch scratch;
  auto a = ApplyTo<uint8_t>(*fast, jpeg, 0, &scratch);
  auto b = ApplyTo<uint8_t>(*exact, jpeg, 0, &scratch);
  EXPECT_LT(MeanAbsDiff(a.data(), b.data(), a.size()), 2.0);
}

TEST(ImageTransform, SameRngSameOutput) {
  const std::string jpeg = EncodeJpegRgb(300, 200);
  auto t = ImageTransform::Make({RandomResizedCrop{32, 32}, RandomHorizontalFlip{}, kImageNet});
  ASSERT_TRUE(t.ok());
  DecodeScratch s1, s2;
  EXPECT_EQ(ApplyTo<float>(*t, jpeg, 123, &s1), ApplyTo<float>(*t, jpeg, 123, &s2));
  EXPECT_NE(ApplyTo<float>(*t, jpeg, 123, &s1), ApplyTo<float>(*t, jpeg, 124, &s1));
}

TEST(ImageTransform, TinyAndOddImages) {
  // 1x1, 1xN and Nx1 images, gray and colour: every op combination must produce output.
  DecodeScratch scratch;
  const std::vector<std::vector<Op>> pipelines = {
      {RandomResizedCrop{16, 16}, RandomHorizontalFlip{}},
      {Resize{20}, CenterCrop{16, 16}},
      {CenterCrop{16, 16}},
  };
  for (auto [w, h] :
       {std::pair{1u, 1u}, std::pair{1u, 37u}, std::pair{37u, 1u}, std::pair{9u, 9u}}) {
    const std::string jpeg = EncodeJpegRgb(w, h);
    for (const auto& ops : pipelines) {
      auto t = ImageTransform::Make(ops, {DType::kFloat32, Layout::kNCHW});
      ASSERT_TRUE(t.ok());
      std::vector<float> out(t->output_bytes() / 4);
      SampleRng rng(w * 100 + h);
      Status s = t->Apply(jpeg, rng, out.data(), &scratch);
      EXPECT_TRUE(s.ok()) << w << "x" << h << " " << OpToString(ops[0]) << ": " << s.ToString();
    }
  }
}

}  // namespace
}  // namespace sluice::vision

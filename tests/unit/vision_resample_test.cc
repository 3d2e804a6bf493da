// The resampler: Pillow's coefficients, and properties any correct resampler has.
#include <gtest/gtest.h>

#include <numeric>

#include "sluice/vision/resample.h"

namespace sluice::vision {
namespace {

// Collects the output rows into one buffer.
class CollectRows : public RowSink {
 public:
  CollectRows(uint32_t width, uint32_t height) : width_(width), rows(size_t{width} * height * 3) {}
  void WriteRow(uint32_t y, const float* rgbx) override {
    for (size_t x = 0; x < width_; ++x) {
      for (size_t c = 0; c < 3; ++c) rows[(size_t{y} * width_ + x) * 3 + c] = rgbx[4 * x + c];
    }
  }
  uint32_t width_;
  std::vector<float> rows;
};

TEST(ResampleAxis, PillowCoefficientsForHalving) {
  // Pillow, 4 -> 2 pixels: scale 2, support 2, centres 1 and 3. Output 0 covers inputs 0..2
  // with triangle weights 0.75, 0.75, 0.25 normalised by 1.75.
  ResampleAxis axis;
  axis.Compute(4, 0, 4, 2);
  EXPECT_EQ(axis.taps(), 5u);
  EXPECT_EQ(axis.first(0), 0);
  ASSERT_EQ(axis.count(0), 3);
  EXPECT_FLOAT_EQ(axis.weights(0)[0], 0.75f / 1.75f);
  EXPECT_FLOAT_EQ(axis.weights(0)[1], 0.75f / 1.75f);
  EXPECT_FLOAT_EQ(axis.weights(0)[2], 0.25f / 1.75f);
  EXPECT_EQ(axis.first(1), 1);  // int(3 - 2 + 0.5) = 1
  ASSERT_EQ(axis.count(1), 3);  // up to the image edge at 4
  EXPECT_EQ(axis.lo(), 0);
  EXPECT_EQ(axis.hi(), 4);
}

TEST(ResampleAxis, WeightsAreNormalisedAndNonNegative) {
  for (auto [in, b0, b1, out] :
       {std::tuple{500u, 0.0, 500.0, 224u}, std::tuple{500u, 13.5, 99.25, 224u},
        std::tuple{64u, 3.0, 10.0, 100u}, std::tuple{3000u, 0.0, 3000.0, 7u}}) {
    ResampleAxis axis;
    axis.Compute(in, b0, b1, out);
    for (uint32_t i = 0; i < out; ++i) {
      const float* w = axis.weights(i);
      float sum = 0;
      for (int k = 0; k < axis.count(i); ++k) {
        ASSERT_GE(w[k], 0.0f);
        sum += w[k];
      }
      ASSERT_NEAR(sum, 1.0f, 1e-5f) << i;
      ASSERT_GE(axis.first(i), 0);
      ASSERT_LE(axis.first(i) + axis.count(i), static_cast<int32_t>(in));
    }
  }
}

TEST(ResampleAxis, FootprintCoversOnlyTheBoxNeighbourhood) {
  ResampleAxis axis;
  axis.Compute(1000, 200, 400, 100);  // scale 2: support 2 around the box
  EXPECT_GE(axis.lo(), 198);
  EXPECT_LE(axis.hi(), 402);
  axis.Shift(150);
  EXPECT_EQ(axis.first(0), axis.lo());
  EXPECT_GE(axis.lo(), 48);
}

TEST(Resampler, IdentityBoxIsExact) {
  const uint32_t w = 13, h = 7;
  std::vector<uint8_t> img(w * h * 3);
  std::iota(img.begin(), img.end(), 0);
  ResampleAxis x, y;
  x.Compute(w, 0, w, w);
  y.Compute(h, 0, h, h);
  CollectRows sink(w, h);
  Resampler().Run(img.data(), w * 3, x, y, &sink);
  for (size_t i = 0; i < img.size(); ++i) ASSERT_FLOAT_EQ(sink.rows[i], img[i]) << i;
}

TEST(Resampler, ConstantImageStaysConstant) {
  const uint32_t w = 57, h = 41;
  std::vector<uint8_t> img(w * h * 3);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<uint8_t>(30 + 70 * (i % 3));
  for (auto [x0, y0, x1, y1, ow, oh] :
       {std::tuple{0.0, 0.0, 57.0, 41.0, 10u, 9u}, std::tuple{3.5, 2.25, 20.0, 40.0, 64u, 64u},
        std::tuple{50.0, 1.0, 57.0, 3.0, 5u, 30u}}) {
    ResampleAxis x, y;
    x.Compute(w, x0, x1, ow);
    y.Compute(h, y0, y1, oh);
    CollectRows sink(ow, oh);
    Resampler().Run(img.data(), w * 3, x, y, &sink);
    for (size_t i = 0; i < sink.rows.size(); ++i) {
      ASSERT_NEAR(sink.rows[i], 30 + 70 * (i % 3), 1e-3) << i;
    }
  }
}

TEST(Resampler, HorizontalGradientIsPreservedUnderShrink) {
  // A linear ramp stays linear under a symmetric filter away from the edges.
  const uint32_t w = 200, h = 4;
  std::vector<uint8_t> img(w * h * 3);
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) img[(y * w + x) * 3 + c] = static_cast<uint8_t>(x);
    }
  }
  ResampleAxis ax, ay;
  ax.Compute(w, 0, w, 50);
  ay.Compute(h, 0, h, h);
  CollectRows sink(50, h);
  Resampler().Run(img.data(), w * 3, ax, ay, &sink);
  for (uint32_t x = 2; x < 48; ++x) {
    EXPECT_NEAR(sink.rows[x * 3], 4 * x + 1.5, 1e-3) << x;  // centre of input block [4x, 4x+4)
  }
}

TEST(Resampler, MatchesTheSeparableSumForEveryTapCountAndWidth) {
  // The kernels (specialised per tap count, two output pixels per vector, odd widths) against
  // the definition: out(x, y) = sum_j wy[j] * sum_i wx[i] * in(first_x + i, first_y + j).
  const uint32_t w = 97, h = 61;
  std::vector<uint8_t> img(w * h * 3);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<uint8_t>((i * 7919) % 251);
  for (auto [x0, x1, ow] :
       {std::tuple{0.0, 97.0, 97u}, std::tuple{0.0, 97.0, 48u}, std::tuple{5.5, 90.0, 33u},
        std::tuple{1.0, 96.0, 19u}, std::tuple{0.0, 97.0, 9u}, std::tuple{0.0, 97.0, 4u},
        std::tuple{10.0, 20.0, 31u}, std::tuple{0.0, 97.0, 1u}}) {
    ResampleAxis x, y;
    x.Compute(w, x0, x1, ow);
    y.Compute(h, 2.0, 59.0, 13);
    CollectRows sink(ow, 13);
    Resampler().Run(img.data(), w * 3, x, y, &sink);
    for (uint32_t oy = 0; oy < 13; ++oy) {
      for (uint32_t ox = 0; ox < ow; ++ox) {
        for (size_t c = 0; c < 3; ++c) {
          double expected = 0;
          for (int32_t j = 0; j < y.count(oy); ++j) {
            double row = 0;
            for (int32_t i = 0; i < x.count(ox); ++i) {
              row += x.weights(ox)[i] * img[((y.first(oy) + j) * w + x.first(ox) + i) * 3 + c];
            }
            expected += y.weights(oy)[j] * row;
          }
          ASSERT_NEAR(sink.rows[(size_t{oy} * ow + ox) * 3 + c], expected, 2e-3)
              << "out width " << ow << " (taps " << x.max_count() << ") at " << ox << "," << oy;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sluice::vision

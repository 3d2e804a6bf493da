// torchvision semantics of the ops: RandomResizedCrop's sampling rule and fallback, the
// geometry of Resize / CenterCrop / flips folded into one crop box, and SampleRng.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "sluice/base/random.h"
#include "sluice/vision/ops.h"

namespace sluice::vision {
namespace {

TEST(SampleRng, DeterministicPerSample) {
  SampleRng a = SampleRng::ForSample(42, 3, 1000), b = SampleRng::ForSample(42, 3, 1000);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.NextU64(), b.NextU64());
  std::set<uint64_t> firsts;
  for (uint64_t index = 0; index < 1000; ++index) {
    firsts.insert(SampleRng::ForSample(42, 3, index).NextU64());
  }
  firsts.insert(SampleRng::ForSample(42, 4, 0).NextU64());
  firsts.insert(SampleRng::ForSample(43, 3, 0).NextU64());
  EXPECT_EQ(firsts.size(), 1002u);  // adjacent samples, epochs and seeds all differ
}

TEST(SampleRng, UniformRangesAndMoments) {
  SampleRng rng(9);
  double sum = 0;
  uint64_t counts[7] = {};
  for (int i = 0; i < 70000; ++i) {
    const double u = rng.NextDouble();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    const uint64_t k = rng.UniformInt(7);
    ASSERT_LT(k, 7u);
    ++counts[k];
  }
  EXPECT_NEAR(sum / 70000, 0.5, 0.01);
  for (uint64_t c : counts) EXPECT_NEAR(static_cast<double>(c), 10000, 500);
}

// ---- RandomResizedCrop.get_params ----

TEST(RandomResizedCropSampling, WindowsFitTheImage) {
  SampleRng rng(1);
  const RandomResizedCrop op;
  for (int i = 0; i < 20000; ++i) {
    const CropWindow w = SampleRandomResizedCrop(500, 375, op, rng);
    ASSERT_GT(w.width, 0u);
    ASSERT_GT(w.height, 0u);
    ASSERT_LE(w.left + w.width, 500u);
    ASSERT_LE(w.top + w.height, 375u);
  }
}

TEST(RandomResizedCropSampling, AreaAndLogRatioAreUniform) {
  // On a large square image with scale <= 0.5, every first attempt fits, so the accepted
  // windows follow the proposal: area fraction ~ U(0.08, 0.5), log ratio ~ U(log 3/4, log 4/3).
  RandomResizedCrop op;
  op.scale_max = 0.5;
  SampleRng rng(2);
  const int n = 40000;
  double area_sum = 0, log_ratio_sum = 0;
  int area_bins[4] = {}, ratio_bins[4] = {};
  const double lr0 = std::log(3.0 / 4), lr1 = std::log(4.0 / 3);
  for (int i = 0; i < n; ++i) {
    const CropWindow w = SampleRandomResizedCrop(2000, 2000, op, rng);
    const double area = static_cast<double>(w.width) * w.height / (2000.0 * 2000.0);
    const double lr = std::log(static_cast<double>(w.width) / w.height);
    area_sum += area;
    log_ratio_sum += lr;
    ++area_bins[std::clamp(static_cast<int>((area - 0.08) / 0.42 * 4), 0, 3)];
    ++ratio_bins[std::clamp(static_cast<int>((lr - lr0) / (lr1 - lr0) * 4), 0, 3)];
  }
  EXPECT_NEAR(area_sum / n, 0.29, 0.005);
  EXPECT_NEAR(log_ratio_sum / n, 0.0, 0.005);
  for (int b = 0; b < 4; ++b) {
    EXPECT_NEAR(area_bins[b], n / 4, n / 40) << b;
    EXPECT_NEAR(ratio_bins[b], n / 4, n / 40) << b;
  }
}

TEST(RandomResizedCropSampling, PositionIsUniform) {
  SampleRng rng(3);
  double left = 0, top = 0;
  int counted = 0;
  for (int i = 0; i < 20000; ++i) {
    const CropWindow w = SampleRandomResizedCrop(640, 480, RandomResizedCrop{}, rng);
    if (w.width < 640 && w.height < 480) {
      left += static_cast<double>(w.left) / (640 - w.width);
      top += static_cast<double>(w.top) / (480 - w.height);
      ++counted;
    }
  }
  EXPECT_NEAR(left / counted, 0.5, 0.01);
  EXPECT_NEAR(top / counted, 0.5, 0.01);
}

TEST(RandomResizedCropSampling, FallbackOnExtremeAspectRatio) {
  // No attempt can fit a 1000x10 strip, so torchvision's fallback applies: the largest
  // centred window with the widest allowed ratio: h = 10, w = round(10 * 4/3) = 13.
  SampleRng rng(4);
  const CropWindow wide = SampleRandomResizedCrop(1000, 10, RandomResizedCrop{}, rng);
  EXPECT_EQ(wide.height, 10u);
  EXPECT_EQ(wide.width, 13u);
  EXPECT_EQ(wide.top, 0u);
  EXPECT_EQ(wide.left, (1000u - 13) / 2);
  const CropWindow tall = SampleRandomResizedCrop(10, 1000, RandomResizedCrop{}, rng);
  EXPECT_EQ(tall.width, 10u);
  EXPECT_EQ(tall.height, 13u);  // round(10 / (3/4))
  EXPECT_EQ(tall.top, (1000u - 13) / 2);
}

TEST(RandomResizedCropSampling, FallbackRoundsHalfToEven) {
  // Python's round(): 5 * 2.5 = 12.5 -> 12.
  RandomResizedCrop op;
  op.ratio_min = 0.5;
  op.ratio_max = 2.5;
  SampleRng rng(5);
  EXPECT_EQ(SampleRandomResizedCrop(1000, 5, op, rng).width, 12u);
  EXPECT_EQ(SampleRandomResizedCrop(1000, 3, op, rng).width, 8u);  // 7.5 -> 8
}

TEST(RandomResizedCropSampling, FallbackToWholeImageWhenScaleCannotFit) {
  RandomResizedCrop op;
  op.scale_min = 1.5;
  op.scale_max = 2.0;
  SampleRng rng(6);
  const CropWindow w = SampleRandomResizedCrop(100, 90, op, rng);
  EXPECT_EQ(w.left, 0u);
  EXPECT_EQ(w.top, 0u);
  EXPECT_EQ(w.width, 100u);
  EXPECT_EQ(w.height, 90u);
}

// ---- PlanCrop ----

TEST(PlanCrop, RandomResizedCropBoxIsTheWindow) {
  SampleRng a(11), b(11);
  auto plan = PlanCrop({RandomResizedCrop{}}, 500, 375, a);
  ASSERT_TRUE(plan.ok());
  const CropWindow w = SampleRandomResizedCrop(500, 375, RandomResizedCrop{}, b);
  EXPECT_NEAR(plan->box_x0, w.left, 1e-9);
  EXPECT_NEAR(plan->box_x1, w.left + w.width, 1e-9);
  EXPECT_NEAR(plan->box_y0, w.top, 1e-9);
  EXPECT_NEAR(plan->box_y1, w.top + w.height, 1e-9);
  EXPECT_EQ(plan->canvas_width, 224u);
  EXPECT_FALSE(plan->padded());
  EXPECT_FALSE(plan->flip);
}

TEST(PlanCrop, ResizeThenCenterCropIsOneBox) {
  // torchvision: Resize(256) makes 500x375 into 341x256 (341.33 truncated), CenterCrop(224)
  // takes left = round(58.5) = 58 (half to even), top = 16.
  SampleRng rng(0);
  auto plan = PlanCrop({Resize{256}, CenterCrop{224, 224}}, 500, 375, rng);
  ASSERT_TRUE(plan.ok());
  EXPECT_NEAR(plan->box_x0, 58 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(plan->box_x1, 282 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(plan->box_y0, 16 * 375.0 / 256, 1e-9);
  EXPECT_NEAR(plan->box_y1, 240 * 375.0 / 256, 1e-9);
}

TEST(PlanCrop, FlipBeforeCenterCropMirrorsTheWindow) {
  // 101 wide, crop 50: left = round(25.5) = 26. After a flip the same window is taken in
  // mirrored coordinates, i.e. source columns [25, 75).
  RandomHorizontalFlip always;
  always.p = 1.0;
  SampleRng rng(0);
  auto plain = PlanCrop({CenterCrop{40, 50}}, 101, 40, rng);
  auto flipped = PlanCrop({always, CenterCrop{40, 50}}, 101, 40, rng);
  ASSERT_TRUE(plain.ok() && flipped.ok());
  EXPECT_DOUBLE_EQ(plain->box_x0, 26);
  EXPECT_DOUBLE_EQ(flipped->box_x0, 25);
  EXPECT_DOUBLE_EQ(flipped->box_x1, 75);
  EXPECT_FALSE(plain->flip);
  EXPECT_TRUE(flipped->flip);
}

TEST(PlanCrop, FlipProbability) {
  int flips = 0;
  for (uint64_t i = 0; i < 4000; ++i) {
    SampleRng rng = SampleRng::ForSample(1, 0, i);
    auto plan = PlanCrop({RandomResizedCrop{}, RandomHorizontalFlip{}}, 300, 200, rng);
    ASSERT_TRUE(plan.ok());
    flips += plan->flip;
  }
  EXPECT_NEAR(flips, 2000, 150);
}

TEST(PlanCrop, CenterCropLargerThanImagePads) {
  // torchvision pads (crop - size) // 2 on the left/top and the rest on the right/bottom.
  SampleRng rng(0);
  auto plan = PlanCrop({CenterCrop{80, 120}}, 100, 50, rng);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->padded());
  EXPECT_EQ(plan->content_x, 10u);
  EXPECT_EQ(plan->content_width, 100u);
  EXPECT_EQ(plan->content_y, 15u);
  EXPECT_EQ(plan->content_height, 50u);
  EXPECT_DOUBLE_EQ(plan->box_x0, 0);
  EXPECT_DOUBLE_EQ(plan->box_x1, 100);
}

TEST(PlanCrop, ResizeAfterPaddingIsRefused) {
  SampleRng rng(0);
  auto plan = PlanCrop({CenterCrop{80, 120}, Resize{0, 40, 40}}, 100, 50, rng);
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  // ... but fine when the crop did not need to pad.
  EXPECT_TRUE(PlanCrop({CenterCrop{40, 40}, Resize{0, 20, 20}}, 100, 50, rng).ok());
}

TEST(PlanCrop, ResizeShorterSideKeepsAspect) {
  SampleRng rng(0);
  auto plan = PlanCrop({Resize{100}}, 300, 450, rng);  // portrait: width is the short side
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->canvas_width, 100u);
  EXPECT_EQ(plan->canvas_height, 150u);
}

TEST(OpToString, NamesParameters) {
  EXPECT_EQ(OpToString(CenterCrop{224, 200}), "CenterCrop((224, 200))");
  EXPECT_EQ(OpToString(Resize{256}), "Resize(256)");
}

}  // namespace
}  // namespace sluice::vision

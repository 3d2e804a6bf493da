// CoalesceRanges: which ranges share a request.
#include "sluice/io/read_ranges.h"

#include <gtest/gtest.h>

#include <random>

namespace sluice::io {
namespace {

CoalesceOptions Limits(uint64_t gap, uint64_t request) {
  CoalesceOptions o;
  o.max_gap = gap;
  o.max_request = request;
  return o;
}

TEST(CoalesceRanges, AdjacentAndNearRangesMerge) {
  auto out = CoalesceRanges({{0, 10}, {10, 10}, {25, 5}}, Limits(5, 100));
  EXPECT_EQ(out, (std::vector<ByteRange>{{0, 30}}));
}

TEST(CoalesceRanges, FarRangesStayApart) {
  auto out = CoalesceRanges({{0, 10}, {16, 4}}, Limits(5, 100));
  EXPECT_EQ(out, (std::vector<ByteRange>{{0, 10}, {16, 4}}));
}

TEST(CoalesceRanges, InputOrderDoesNotMatter) {
  auto out = CoalesceRanges({{50, 10}, {0, 10}, {12, 10}}, Limits(5, 100));
  EXPECT_EQ(out, (std::vector<ByteRange>{{0, 22}, {50, 10}}));
}

TEST(CoalesceRanges, RequestsStopGrowingAtTheLimit) {
  auto out = CoalesceRanges({{0, 40}, {40, 40}, {80, 40}}, Limits(5, 100));
  EXPECT_EQ(out, (std::vector<ByteRange>{{0, 80}, {80, 40}}));
}

TEST(CoalesceRanges, LongSingleRangeStaysWhole) {
  auto out = CoalesceRanges({{0, 500}, {600, 10}}, Limits(5, 100));
  EXPECT_EQ(out, (std::vector<ByteRange>{{0, 500}, {600, 10}}));
}

TEST(CoalesceRanges, OverlapsAlwaysMergeEvenPastTheLimit) {
  auto out = CoalesceRanges({{0, 80}, {70, 80}, {5, 5}}, Limits(0, 100));
  EXPECT_EQ(out, (std::vector<ByteRange>{{0, 150}}));
}

TEST(CoalesceRanges, EmptyRangesAreDropped) {
  EXPECT_TRUE(CoalesceRanges({{7, 0}}, Limits(5, 100)).empty());
  EXPECT_TRUE(CoalesceRanges({}, Limits(5, 100)).empty());
}

TEST(CoalesceRanges, EveryRangeLiesInExactlyOneDisjointRequest) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<ByteRange> in;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) in.push_back({rng() % 10000, rng() % 300});
    const CoalesceOptions o = Limits(rng() % 200, 100 + rng() % 2000);
    auto out = CoalesceRanges(in, o);
    for (size_t i = 1; i < out.size(); ++i) ASSERT_LT(out[i - 1].end(), out[i].offset + 1);
    for (const ByteRange& r : in) {
      if (r.length == 0) continue;
      int containing = 0;
      for (const ByteRange& q : out) containing += q.offset <= r.offset && r.end() <= q.end();
      ASSERT_EQ(containing, 1);
    }
  }
}

TEST(CoalesceOptions, DerivedFromFirstByteLatencyAndBandwidth) {
  CoalesceOptions o = CoalesceOptions::FromNetwork(0.02, 100e6);
  EXPECT_EQ(o.max_gap, 2000000u);
  EXPECT_EQ(o.max_request, 18000000u);
  EXPECT_EQ(CoalesceOptions::ForS3().max_gap, 2700000u);
}

}  // namespace
}  // namespace sluice::io

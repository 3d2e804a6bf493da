// Over-long documents and choosing bucket boundaries (padding and bucketing themselves are
// the pipeline stages, tested in pipeline_stages_test.cc).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "sluice/text/bucketing.h"
#include "sluice/text/length_limit.h"

namespace sluice::text {
namespace {

using Doc = std::vector<int32_t>;

TEST(LengthLimit, EachPolicy) {
  const Doc doc = {1, 2, 3, 4, 5, 6, 7};
  std::vector<std::span<const int32_t>> out;
  ASSERT_TRUE(ApplyLengthLimit<int32_t>(doc, {3, LongDocumentPolicy::kTruncate}, 0, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Doc(out[0].begin(), out[0].end()), (Doc{1, 2, 3}));
  out.clear();
  ASSERT_TRUE(ApplyLengthLimit<int32_t>(doc, {3, LongDocumentPolicy::kSplit}, 0, &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(Doc(out[2].begin(), out[2].end()), (Doc{7}));
  EXPECT_EQ(out[0].data() + 3, out[1].data());  // zero copy, consecutive
  out.clear();
  ASSERT_TRUE(ApplyLengthLimit<int32_t>(doc, {3, LongDocumentPolicy::kDrop}, 0, &out).ok());
  EXPECT_TRUE(out.empty());
  Status st = ApplyLengthLimit<int32_t>(doc, {3, LongDocumentPolicy::kError}, 41, &out);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(st.message(), "document 41 has 7 tokens, over the limit of 3");
  ASSERT_TRUE(ApplyLengthLimit<int32_t>(doc, {0, LongDocumentPolicy::kError}, 0, &out).ok());
  ASSERT_TRUE(ApplyLengthLimit<int32_t>(Doc{}, {3, LongDocumentPolicy::kDrop}, 0, &out).ok());
  EXPECT_EQ(out.size(), 2u);  // the whole document, then the empty one
}

TEST(Bucketing, BalancedBoundariesSplitTokensEvenly) {
  // 900 documents of length 1 and 100 of length 9: 900 tokens each.
  std::vector<size_t> lengths(900, 1);
  lengths.insert(lengths.end(), 100, 9);
  EXPECT_EQ(BalancedBoundaries(lengths, 2), (std::vector<size_t>{2}));
  std::vector<size_t> ramp;
  for (size_t i = 1; i <= 100; ++i) ramp.push_back(i);
  const auto bounds = BalancedBoundaries(ramp, 4);  // 5050 tokens: quarters end near 50, 71, 87
  EXPECT_EQ(bounds, (std::vector<size_t>{51, 72, 88}));
  const std::vector<size_t> same(100, 5);
  EXPECT_TRUE(BalancedBoundaries(same, 4).empty());  // one bucket holds them all
  EXPECT_TRUE(BalancedBoundaries({}, 4).empty());
  EXPECT_EQ(BatchSizesForTokenBudget(bounds, 4096, 2000), (std::vector<size_t>{81, 57, 47, 2}));
}

TEST(Bucketing, GeometricBoundariesGrowByRatio) {
  EXPECT_EQ(GeometricBoundaries(20, 1.5), (std::vector<size_t>{2, 3, 5, 8, 12, 18, 20}));
  EXPECT_TRUE(GeometricBoundaries(20, 1.0).empty());
  for (size_t b : GeometricBoundaries(512, 1.1)) EXPECT_LE(b, 512u);
}

}  // namespace
}  // namespace sluice::text

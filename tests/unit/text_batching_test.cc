// Padding, over-long documents and length bucketing.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "sluice/text/bucketing.h"
#include "sluice/text/length_limit.h"
#include "sluice/text/padding.h"

namespace sluice::text {
namespace {

using Doc = std::vector<int32_t>;

std::vector<std::span<const int32_t>> Spans(const std::vector<Doc>& docs) {
  return std::vector<std::span<const int32_t>>(docs.begin(), docs.end());
}

TEST(Padding, PadsToLongestRoundedUpWithMask) {
  const std::vector<Doc> docs = {{1, 2, 3}, {4, 5, 6, 7, 8, 9, 10, 11, 12}, {}};
  PaddedBatch b;
  ASSERT_TRUE(PadBatch<int32_t>(Spans(docs), {.pad_id = -7, .pad_to_multiple_of = 8}, &b).ok());
  ASSERT_EQ(b.rows, 3u);
  ASSERT_EQ(b.cols, 16u);  // 9 rounded up to a multiple of 8
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(b.lengths[r], static_cast<int32_t>(docs[r].size()));
    for (size_t c = 0; c < b.cols; ++c) {
      const bool real = c < docs[r].size();
      EXPECT_EQ(b.tokens[r * 16 + c], real ? docs[r][c] : -7) << r << "," << c;
      EXPECT_EQ(b.attention_mask[r * 16 + c], real ? 1 : 0) << r << "," << c;
    }
  }
  EXPECT_EQ(b.counts().real, 12u);
  EXPECT_EQ(b.counts().total, 48u);
  EXPECT_DOUBLE_EQ(b.counts().waste(), 36.0 / 48.0);
}

TEST(Padding, LeftPaddingEndsEveryRowAtItsLastId) {
  const std::vector<Doc> docs = {{1, 2}, {3, 4, 5}};
  PaddedBatch b;
  ASSERT_TRUE(PadBatch<int32_t>(
                  Spans(docs),
                  {.pad_id = 0, .pad_to_multiple_of = 1, .fixed_length = 0, .side = PadSide::kLeft},
                  &b)
                  .ok());
  EXPECT_EQ(b.tokens, (Doc{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b.attention_mask, (std::vector<uint8_t>{0, 1, 1, 1, 1, 1}));
}

TEST(Padding, DocumentLongerThanFixedLengthIsInvalidArgument) {
  const std::vector<Doc> docs = {{1, 2, 3, 4, 5}};
  PaddedBatch b;
  PaddingOptions fixed{.pad_id = 0, .pad_to_multiple_of = 8, .fixed_length = 4};
  EXPECT_EQ(PadBatch<int32_t>(Spans(docs), fixed, &b).code(), StatusCode::kInvalidArgument);
  fixed.fixed_length = 32;
  ASSERT_TRUE(PadBatch<int32_t>(Spans(docs), fixed, &b).ok());
  EXPECT_EQ(b.cols, 32u);  // fixed, not rounded from the longest
}

TEST(Padding, EmptyBatchAndEmptyDocuments) {
  PaddedBatch b;
  ASSERT_TRUE(PadBatch<int32_t>({}, {}, &b).ok());
  EXPECT_EQ(b.rows, 0u);
  EXPECT_EQ(b.cols, 0u);
  const std::vector<Doc> empties(3);
  ASSERT_TRUE(PadBatch<int32_t>(Spans(empties), {}, &b).ok());
  EXPECT_EQ(b.rows, 3u);
  EXPECT_EQ(b.cols, 0u);
  EXPECT_EQ(b.counts().waste(), 0.0);
}

TEST(Padding, IdOutsideInt32IsInvalidArgument) {
  const std::vector<int64_t> big = {1, int64_t{1} << 40};
  const std::vector<int64_t> negative = {-1};
  PaddedBatch b;
  std::vector<std::span<const int64_t>> docs = {big};
  EXPECT_EQ(PadBatch<int64_t>(docs, {}, &b).code(), StatusCode::kInvalidArgument);
  docs = {negative};
  EXPECT_EQ(PadBatch<int64_t>(docs, {}, &b).code(), StatusCode::kInvalidArgument);
}

TEST(Padding, ReusedBatchKeepsNoStaleValues) {
  const std::vector<uint16_t> a(20, 9), c = {1, 2};
  PaddedBatch b;
  std::vector<std::span<const uint16_t>> docs = {a, a, a};
  ASSERT_TRUE(PadBatch<uint16_t>(docs, {}, &b).ok());
  docs = {c};
  ASSERT_TRUE(PadBatch<uint16_t>(docs, {.pad_id = 0, .pad_to_multiple_of = 4}, &b).ok());
  EXPECT_EQ(b.tokens, (Doc{1, 2, 0, 0}));
  EXPECT_EQ(b.attention_mask, (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(b.lengths, (Doc{2}));
}

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

TEST(Bucketing, BadOptionsAreInvalidArgument) {
  EXPECT_FALSE(LengthBucketer::Create({{10, 5}, {1, 1, 1}, false}).ok());
  EXPECT_FALSE(LengthBucketer::Create({{0, 5}, {1, 1, 1}, false}).ok());
  EXPECT_FALSE(LengthBucketer::Create({{5, 10}, {1, 1}, false}).ok());
  EXPECT_FALSE(LengthBucketer::Create({{5, 10}, {1, 0, 1}, false}).ok());
  EXPECT_TRUE(LengthBucketer::Create({{}, {4}, false}).ok());  // one bucket: plain batching
}

TEST(Bucketing, BoundariesAreUpperExclusive) {
  auto b = LengthBucketer::Create({{8, 16}, {4, 2, 1}, false});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->BucketFor(0), 0u);
  EXPECT_EQ(b->BucketFor(7), 0u);
  EXPECT_EQ(b->BucketFor(8), 1u);
  EXPECT_EQ(b->BucketFor(15), 1u);
  EXPECT_EQ(b->BucketFor(16), 2u);
  EXPECT_EQ(b->BucketFor(100000), 2u);
}

// Runs a bucketer over (id, length) pairs, optionally restoring into a fresh one mid-way.
std::vector<std::vector<uint64_t>> RunBuckets(const BucketingOptions& opts,
                                              const std::vector<size_t>& lengths,
                                              size_t restore_at = SIZE_MAX) {
  auto b = LengthBucketer::Create(opts);
  std::vector<std::vector<uint64_t>> batches;
  std::vector<uint64_t> batch;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (i == restore_at) {
      auto fresh = LengthBucketer::Create(opts);
      EXPECT_TRUE(fresh->Restore(b->pending()).ok());
      b = std::move(fresh);
    }
    if (b->Add(i, lengths[i], &batch)) batches.push_back(batch);
  }
  while (b->Flush(&batch)) batches.push_back(batch);
  return batches;
}

TEST(Bucketing, EveryElementOnceInABatchOfItsBucket) {
  std::mt19937 rng(7);
  std::vector<size_t> lengths(1000);
  for (auto& l : lengths) l = rng() % 100;
  const BucketingOptions opts{{10, 30, 60}, {8, 5, 3, 2}, false};
  auto b = LengthBucketer::Create(opts);
  std::set<uint64_t> seen;
  for (const auto& batch : RunBuckets(opts, lengths)) {
    ASSERT_FALSE(batch.empty());
    const size_t bucket = b->BucketFor(lengths[batch[0]]);
    EXPECT_LE(batch.size(), opts.batch_sizes[bucket]);
    for (uint64_t id : batch) {
      EXPECT_EQ(b->BucketFor(lengths[id]), bucket);
      EXPECT_TRUE(seen.insert(id).second) << "id twice: " << id;
    }
  }
  EXPECT_EQ(seen.size(), lengths.size());
}

TEST(Bucketing, DropRemainderEmitsOnlyFullBatches) {
  const std::vector<size_t> lengths = {1, 1, 1, 50, 1};
  const auto batches = RunBuckets({{10}, {2, 2}, true}, lengths);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(batches[1], (std::vector<uint64_t>{2, 4}));
}

TEST(Bucketing, RestoredBucketerContinuesIdentically) {
  std::mt19937 rng(11);
  std::vector<size_t> lengths(300);
  for (auto& l : lengths) l = rng() % 50;
  const BucketingOptions opts{{5, 20}, {7, 4, 3}, false};
  const auto expected = RunBuckets(opts, lengths);
  for (size_t at : {0, 1, 13, 150, 299}) EXPECT_EQ(RunBuckets(opts, lengths, at), expected) << at;
  auto b = LengthBucketer::Create(opts);
  EXPECT_FALSE(b->Restore({{}, {}}).ok());
  EXPECT_FALSE(b->Restore({{1, 2, 3, 4, 5, 6, 7}, {}, {}}).ok());
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

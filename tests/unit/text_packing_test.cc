#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "sluice/text/packing.h"

namespace sluice::text {
namespace {

using Doc = std::vector<int32_t>;

std::vector<Doc> RandomDocs(size_t n, size_t max_len, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Doc> docs(n);
  for (auto& d : docs) {
    d.resize(rng() % (max_len + 1));
    for (auto& id : d) id = static_cast<int32_t>(3 + rng() % 1000);
  }
  return docs;
}

PackedBatch PackAll(const std::vector<Doc>& docs, const PackingOptions& options) {
  std::vector<std::span<const int32_t>> spans(docs.begin(), docs.end());
  PackedBatch out;
  EXPECT_TRUE(PackDocuments<int32_t>(spans, options, &out).ok());
  return out;
}

// The structural invariants every packed batch must satisfy, whatever its input.
void CheckStructure(const PackedBatch& b, bool continue_positions) {
  ASSERT_EQ(b.tokens.size(), b.rows * b.seq_len);
  ASSERT_EQ(b.segment_ids.size(), b.tokens.size());
  ASSERT_EQ(b.position_ids.size(), b.tokens.size());
  for (size_t r = 0; r < b.rows; ++r) {
    int32_t prev_seg = 0, prev_pos = -1;
    bool padding = false;
    for (size_t c = 0; c < b.seq_len; ++c) {
      const int32_t seg = b.segment_ids[r * b.seq_len + c];
      const int32_t pos = b.position_ids[r * b.seq_len + c];
      if (seg == 0) {  // padding: only a tail, position 0
        padding = true;
        EXPECT_EQ(pos, 0);
        continue;
      }
      ASSERT_FALSE(padding) << "token after padding in row " << r;
      if (c == 0) {
        EXPECT_EQ(seg, 1) << "row " << r;
      } else if (seg != prev_seg) {
        EXPECT_EQ(seg, prev_seg + 1) << "row " << r << " col " << c;
        EXPECT_EQ(pos, 0) << "a new document starts at position 0";
      } else {
        EXPECT_EQ(pos, prev_pos + 1) << "row " << r << " col " << c;
      }
      if (c == 0 && !continue_positions) {
        EXPECT_EQ(pos, 0);
      }
      prev_seg = seg;
      prev_pos = pos;
    }
  }
}

TEST(Packing, NoTokenLostAndOrderKept) {
  const auto docs = RandomDocs(200, 50, 1);
  for (int32_t eos : {-1, 2}) {
    const PackedBatch b = PackAll(docs, {.seq_len = 64, .eos_id = eos});
    CheckStructure(b, false);
    Doc expected, got;
    for (const auto& d : docs) {
      expected.insert(expected.end(), d.begin(), d.end());
      if (eos >= 0) expected.push_back(eos);
    }
    for (size_t i = 0; i < b.tokens.size(); ++i) {
      if (b.segment_ids[i] != 0) got.push_back(b.tokens[i]);
    }
    EXPECT_EQ(got, expected) << "eos " << eos;
    EXPECT_EQ(b.counts().real, expected.size());
    EXPECT_EQ(b.rows, (expected.size() + 63) / 64);  // only the last row has padding
  }
}

TEST(Packing, LongDocumentContinuesWithRestartedPositions) {
  Doc long_doc(25);
  for (int i = 0; i < 25; ++i) long_doc[i] = 100 + i;
  const PackedBatch b = PackAll({{7, 8}, long_doc}, {.seq_len = 10, .eos_id = -1, .pad_id = 0});
  CheckStructure(b, false);
  ASSERT_EQ(b.rows, 3u);
  EXPECT_EQ(b.segment_ids, (Doc{1, 1, 2, 2, 2, 2, 2, 2, 2, 2,  //
                                1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                1, 1, 1, 1, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(b.position_ids, (Doc{0, 1, 0, 1, 2, 3, 4, 5, 6, 7,  //
                                 0, 1, 2, 3, 4, 5, 6, 7, 8, 9,  //
                                 0, 1, 2, 3, 4, 5, 6, 0, 0, 0}));
  EXPECT_EQ(b.tokens[10], 108);
  EXPECT_EQ(b.tokens[26], 124);
}

TEST(Packing, ContinuePositionsOption) {
  Doc long_doc(25, 5);
  const PackedBatch b =
      PackAll({{7, 8}, long_doc}, {.seq_len = 10, .eos_id = 2, .continue_positions = true});
  CheckStructure(b, true);
  // Row 0 holds {7, 8, eos} and the document's first 7 ids; row 1 starts with its 8th.
  EXPECT_EQ(b.position_ids[10], 7);
  EXPECT_EQ(b.position_ids[20], 17);
  EXPECT_EQ(b.tokens[28], 2);         // eos follows the last id...
  EXPECT_EQ(b.position_ids[28], 25);  // ...at the next position
  EXPECT_EQ(b.segment_ids[28], 1);
}

TEST(Packing, EosThatOverflowsStartsTheNextSequence) {
  const PackedBatch b = PackAll({{5, 6, 7, 8}, {9}}, {.seq_len = 4, .eos_id = 2});
  ASSERT_EQ(b.rows, 2u);
  EXPECT_EQ(b.tokens, (Doc{5, 6, 7, 8, 2, 9, 2, 0}));
  EXPECT_EQ(b.segment_ids, (Doc{1, 1, 1, 1, 1, 2, 2, 0}));
  EXPECT_EQ(b.position_ids, (Doc{0, 1, 2, 3, 0, 0, 1, 0}));
}

TEST(Packing, EmptyDocumentsWithoutEosVanish) {
  const PackedBatch b = PackAll({{}, {4}, {}, {}, {5}}, {.seq_len = 4});
  EXPECT_EQ(b.tokens, (Doc{4, 5, 0, 0}));
  EXPECT_EQ(b.segment_ids, (Doc{1, 2, 0, 0}));
}

TEST(Packing, DropRemainderDropsPartialSequence) {
  const PackedBatch b = PackAll({{1, 2, 3, 4, 5}}, {.seq_len = 4, .drop_remainder = true});
  EXPECT_EQ(b.rows, 1u);
  EXPECT_EQ(b.tokens, (Doc{1, 2, 3, 4}));
  EXPECT_EQ(PackAll({}, {.seq_len = 4}).rows, 0u);
}

TEST(Packing, BadInputLeavesPackerUnchanged) {
  EXPECT_EQ(SequencePacker::Create({.seq_len = 0}).status().code(), StatusCode::kInvalidArgument);
  auto p = SequencePacker::Create({.seq_len = 4});
  ASSERT_TRUE(p.ok());
  const std::vector<uint32_t> bad = {1, 0x80000000u};
  EXPECT_EQ(p->Add(std::span<const uint32_t>(bad)).code(), StatusCode::kInvalidArgument);
  const Doc ok = {1, 2};
  EXPECT_EQ(p->Add(std::span<const int32_t>(ok), 3).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(p->Add(std::span<const int32_t>(ok)).ok());
  p->Finish();
  EXPECT_EQ(p->Add(std::span<const int32_t>(ok)).code(), StatusCode::kFailedPrecondition);
  PackedBatch b;
  EXPECT_EQ(p->Take(10, &b), 1u);
  EXPECT_EQ(b.tokens, (Doc{1, 2, 0, 0}));
  EXPECT_EQ(b.position_ids, (Doc{0, 1, 0, 0}));
}

// Streams `docs` through a packer taking `rows` sequences at a time. When `interrupt_after`
// batches have been taken, saves the resume point and continues in a fresh packer.
std::vector<PackedBatch> Stream(const std::vector<Doc>& docs, const PackingOptions& options,
                                size_t rows, size_t interrupt_after = SIZE_MAX) {
  auto packer = SequencePacker::Create(options);
  std::vector<PackedBatch> out;
  size_t next_doc = 0;
  uint64_t doc_base = 0;  // documents of the stream before the current packer's first
  size_t first = 0;
  while (true) {
    while (packer->ready() < rows && next_doc < docs.size()) {
      EXPECT_TRUE(packer->Add(std::span<const int32_t>(docs[next_doc]), first).ok());
      first = 0;
      ++next_doc;
    }
    if (next_doc == docs.size()) packer->Finish();
    PackedBatch b;
    if (packer->Take(rows, &b) == 0) break;
    out.push_back(b);
    if (out.size() == interrupt_after) {
      auto [doc, offset] = packer->ResumePoint();
      next_doc = static_cast<size_t>(doc_base + doc);
      doc_base = next_doc;
      first = offset;
      packer = SequencePacker::Create(options);
    }
  }
  return out;
}

TEST(Packing, ResumeFromSavedPointReproducesStream) {
  const auto docs = RandomDocs(300, 90, 3);
  for (bool cont : {false, true}) {
    const PackingOptions options{.seq_len = 32, .eos_id = 2, .continue_positions = cont};
    const auto expected = Stream(docs, options, 3);
    ASSERT_GT(expected.size(), 20u);
    for (size_t at : {1, 2, 7, 20}) {
      const auto resumed = Stream(docs, options, 3, at);
      ASSERT_EQ(resumed.size(), expected.size()) << at;
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(resumed[i].tokens, expected[i].tokens) << "batch " << i << " after " << at;
        EXPECT_EQ(resumed[i].segment_ids, expected[i].segment_ids);
        EXPECT_EQ(resumed[i].position_ids, expected[i].position_ids);
      }
    }
  }
}

TEST(Packing, WideInputTypesPackTheSame) {
  const std::vector<uint16_t> a = {1, 2, 3};
  const std::vector<int64_t> b = {1, 2, 3};
  PackedBatch pa, pb;
  std::vector<std::span<const uint16_t>> sa = {a};
  std::vector<std::span<const int64_t>> sb = {b};
  ASSERT_TRUE(PackDocuments<uint16_t>(sa, {.seq_len = 2}, &pa).ok());
  ASSERT_TRUE(PackDocuments<int64_t>(sb, {.seq_len = 2}, &pb).ok());
  EXPECT_EQ(pa.tokens, pb.tokens);
  EXPECT_EQ(pa.tokens, (Doc{1, 2, 3, 0}));
}

}  // namespace
}  // namespace sluice::text

// The text pipeline stages: tokenize equals Tokenizer::Encode and reports invalid UTF-8 under
// the on_error policy naming the record; pack equals the one-shot packer and restores exactly
// at every breakpoint; a token cache reads as a dataset with global shuffle, shard and resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "pipeline_test_util.h"
#include "sluice/text/stages.h"
#include "sluice/text/token_cache.h"
#include "text_test_data.h"

namespace sluice::text {
namespace {

using pipeline::Dataset;
using pipeline::DType;
using pipeline::Element;
using pipeline::ErrorPolicy;
using pipeline::Iterator;
using pipeline::MapContext;
using pipeline::NewMemorySource;
using pipeline::PipelineOptions;
using pipeline::Shape;
using pipeline::testing::MakeIt;

std::shared_ptr<const Tokenizer> LoadTokenizer() {
  auto tok = Tokenizer::Open(io::LocalFileSystem(), testing::TextTestData(testing::kUnigramModel));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::shared_ptr<const Tokenizer>(std::move(tok).value()) : nullptr;
}

TokenizeOptions Tok(std::string feature, ErrorPolicy policy = ErrorPolicy::kRaise,
                    bool replace = false, std::string output = "tokens") {
  TokenizeOptions o;
  o.feature = std::move(feature);
  o.output = std::move(output);
  o.on_error = policy;
  o.replace_invalid_utf8 = replace;
  return o;
}

std::vector<std::string> Texts(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string t = "Document " + std::to_string(i) + ": the kernel";
    for (size_t k = 0; k < i % 9; ++k) t += " schedules interrupts and memory";
    out.push_back(t);
  }
  out.push_back("");  // empty text gives no ids
  return out;
}

std::vector<int32_t> Ints(const pipeline::Tensor& t) {
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.num_elements());
}

// Tensor `index` of up to `max` elements as int32 vectors; fails the test on an error.
std::vector<std::vector<int32_t>> DrainInts(Iterator* it, size_t index, size_t max = SIZE_MAX,
                                            Status* error = nullptr) {
  std::vector<std::vector<int32_t>> out;
  Element e;
  while (out.size() < max) {
    Result<bool> more = it->Next(&e);
    if (!more.ok() && error) {
      *error = more.status();
      break;
    }
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(Ints(e.tensors.at(index)));
  }
  return out;
}

TEST(TextTokenizeStage, EqualsTokenizerEncode) {
  auto tok = LoadTokenizer();
  ASSERT_TRUE(tok);
  std::vector<std::string> texts = Texts(200);
  Dataset ds = Tokenize(Dataset::FromSource(NewMemorySource({texts})), tok, Tok("record"));
  ASSERT_TRUE(ds.status().ok()) << ds.status().ToString();
  EXPECT_EQ(ds.schema().ToString(), "{record: string[], tokens: int32[-1]}");
  auto it = MakeIt(ds, 2);
  auto got = DrainInts(it.get(), 1);
  ASSERT_EQ(got.size(), texts.size());
  std::vector<int32_t> want;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(tok->Encode(texts[i], &want).ok());
    EXPECT_EQ(got[i], want) << "text " << i;
  }
}

TEST(TextTokenizeStage, NonStringFeatureIsRejected) {
  auto tok = LoadTokenizer();
  Dataset ds = Tokenize(Dataset::FromSource(NewMemorySource({{"a"}})), tok, Tok("nope"));
  EXPECT_EQ(ds.status().code(), StatusCode::kNotFound) << ds.status().ToString();
}

std::vector<std::string> TextsWithBadUtf8() {
  return {"good one", "also good", "bad \xff here", "last"};
}

TEST(TextTokenizeStage, InvalidUtf8RaiseNamesRecord) {
  auto tok = LoadTokenizer();
  Dataset ds =
      Tokenize(Dataset::FromSource(NewMemorySource({TextsWithBadUtf8()})), tok, Tok("record"));
  auto it = MakeIt(ds, 2);
  Status error;
  auto got = DrainInts(it.get(), 1, SIZE_MAX, &error);
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(error.code(), StatusCode::kDataLoss) << error.ToString();
  EXPECT_NE(error.ToString().find("shard 'memory-shard-0' record 2"), std::string::npos)
      << error.ToString();
  EXPECT_NE(error.ToString().find("byte 0xff at offset 4"), std::string::npos) << error.ToString();
}

TEST(TextTokenizeStage, InvalidUtf8SkipDropsRecordAndCountsIt) {
  auto tok = LoadTokenizer();
  Dataset ds = Tokenize(Dataset::FromSource(NewMemorySource({TextsWithBadUtf8()})), tok,
                        Tok("record", ErrorPolicy::kSkip));
  auto it = MakeIt(ds, 2);
  auto got = DrainInts(it.get(), 1);
  ASSERT_EQ(got.size(), 3u);
  std::vector<int32_t> last;
  ASSERT_TRUE(tok->Encode("last", &last).ok());
  EXPECT_EQ(got[2], last);
  EXPECT_NE(it->Report().find("skipped"), std::string::npos) << it->Report();
}

TEST(TextTokenizeStage, InvalidUtf8ReplaceEqualsSentencePiece) {
  auto tok = LoadTokenizer();
  std::vector<std::string> texts = TextsWithBadUtf8();
  Dataset ds = Tokenize(Dataset::FromSource(NewMemorySource({texts})), tok,
                        Tok("record", ErrorPolicy::kRaise, true, "record"));
  EXPECT_EQ(ds.schema().ToString(), "{record: int32[-1]}");
  auto it = MakeIt(ds, 2);
  auto got = DrainInts(it.get(), 0);
  ASSERT_EQ(got.size(), texts.size());
  std::vector<int32_t> want;
  ASSERT_TRUE(tok->Encode(texts[2], &want).ok());
  EXPECT_EQ(got[2], want);
}

// Record i -> int32 tokens of length (i * 7) % 23 (0 included), values i * 100 + j.
Dataset SyntheticDocs(uint64_t n) {
  std::vector<std::string> records;
  for (uint64_t i = 0; i < n; ++i) records.push_back(std::to_string(i));
  pipeline::MapOptions mo;
  mo.name = "doc";
  mo.parallelism = 2;
  mo.output_schema = pipeline::Schema({{"tokens", DType::kInt32, Shape{-1}}});
  return Dataset::FromSource(NewMemorySource({records}))
      .Shuffle({.seed = 3})
      .Map(
          [](Element* e, const MapContext& ctx) {
            int64_t i = std::stoll(std::string(e->tensors[0].string(0)));
            int64_t len = (i * 7) % 23;
            e->tensors[0].ResizeDense(DType::kInt32, Shape{len}, ctx.pool());
            for (int64_t j = 0; j < len; ++j) e->tensors[0].data<int32_t>()[j] = i * 100 + j;
            return Status::OK();
          },
          mo);
}

PackOptions Packing(size_t seq_len) {
  PackOptions o;
  o.packing.seq_len = seq_len;
  o.packing.eos_id = 1;
  return o;
}

TEST(TextPackStage, EqualsOneShotPacker) {
  auto it = MakeIt(SyntheticDocs(60), 2);
  auto docs = DrainInts(it.get(), 0);
  std::vector<std::span<const int32_t>> spans(docs.begin(), docs.end());
  PackedBatch want;
  ASSERT_TRUE(PackDocuments<int32_t>(spans, Packing(16).packing, &want).ok());

  Dataset ds = Pack(SyntheticDocs(60), Packing(16));
  ASSERT_TRUE(ds.status().ok()) << ds.status().ToString();
  EXPECT_EQ(ds.schema().ToString(),
            "{tokens: int32[16], segment_ids: int32[16], position_ids: int32[16]}");
  auto packed = MakeIt(ds, 2);
  std::vector<int32_t> tokens, segments, positions;
  Element e;
  while (true) {
    Result<bool> more = packed->Next(&e);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    for (auto [i, v] : {std::pair{0, &tokens}, {1, &segments}, {2, &positions}}) {
      std::vector<int32_t> row = Ints(e.tensors[i]);
      v->insert(v->end(), row.begin(), row.end());
    }
  }
  EXPECT_EQ(tokens, want.tokens);
  EXPECT_EQ(segments, want.segment_ids);
  EXPECT_EQ(positions, want.position_ids);
}

TEST(TextPackStage, WrongFeatureTypeIsRejected) {
  PackOptions o;
  o.feature = "record";
  Dataset ds = Pack(Dataset::FromSource(NewMemorySource({{"a"}})), o);
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument) << ds.status().ToString();
}

// Flattened tokens + segment ids of everything left in `it`.
std::vector<int32_t> Rest(Iterator* it) {
  std::vector<int32_t> out;
  for (const auto& row : DrainInts(it, 0)) out.insert(out.end(), row.begin(), row.end());
  return out;
}

// Save after k outputs, restore into a fresh iterator: the rest equals the uninterrupted
// stream, at every k (start, mid-document, document boundaries, epoch boundary, end).
void ExpectExactRestore(const Dataset& ds) {
  auto full = MakeIt(ds, 2);
  auto all = DrainInts(full.get(), 0);
  ASSERT_GT(all.size(), 4u);
  for (size_t k = 0; k <= all.size(); ++k) {
    auto first = MakeIt(ds, 2);
    ASSERT_EQ(DrainInts(first.get(), 0, k).size(), std::min(k, all.size()));
    Result<std::string> state = first->Save();
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    EXPECT_LT(state->size(), 512u) << "state holds positions, not tokens";
    auto second = MakeIt(ds, 2);
    Status s = second->Restore(*state);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<int32_t> want;
    for (size_t i = k; i < all.size(); ++i) want.insert(want.end(), all[i].begin(), all[i].end());
    EXPECT_EQ(Rest(second.get()), want) << "restored after " << k << " sequences";
  }
}

TEST(TextPackStage, SaveRestoreAtEveryBreakpointEqualsUninterrupted) {
  ExpectExactRestore(Pack(SyntheticDocs(40), Packing(16)));
}

TEST(TextPackStage, SaveRestoreWithLongDocumentsPrefetchAndRepeat) {
  // seq_len 5 < most documents: one document spans several sequences.
  ExpectExactRestore(Pack(SyntheticDocs(15).Repeat(2), Packing(5)).Prefetch(2));
}

TEST(TextPackStage, SaveRestoreMidBatchOfPackedSequences) {
  Dataset ds = Pack(SyntheticDocs(40), Packing(8)).Batch(3);
  ExpectExactRestore(ds);
}

class TextTokenCacheSource : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice_tc_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    prefix_ = (dir_ / "cache").string();
    auto w = TokenCacheWriter::Create(io::LocalFileSystem(), prefix_, 70000);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int32_t i = 0; i < kDocs; ++i) {
      std::vector<int32_t> doc(static_cast<size_t>(i % 5), i);
      doc.push_back(65536 + i);  // needs 32-bit ids
      ASSERT_TRUE((*w)->Append(doc).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static constexpr int32_t kDocs = 37;
  std::filesystem::path dir_;
  std::string prefix_;
};

// A document's id: its last token minus 65536.
std::vector<int32_t> DocIds(const std::vector<std::vector<int32_t>>& docs) {
  std::vector<int32_t> out;
  for (const auto& d : docs) out.push_back(d.back() - 65536);
  return out;
}

TEST_F(TextTokenCacheSource, DocumentsBecomeTokenElements) {
  auto ds = ReadTokenCache(prefix_);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->schema().ToString(), "{tokens: int32[-1]}");
  auto it = MakeIt(*ds, 2);
  auto docs = DrainInts(it.get(), 0);
  ASSERT_EQ(docs.size(), static_cast<size_t>(kDocs));
  for (int32_t i = 0; i < kDocs; ++i) {
    std::vector<int32_t> want(static_cast<size_t>(i % 5), i);
    want.push_back(65536 + i);
    EXPECT_EQ(docs[i], want);
  }
}

TEST_F(TextTokenCacheSource, GlobalShuffleShardAndResume) {
  TokenCacheDatasetOptions o;
  o.shuffle = pipeline::ShuffleOptions{.seed = 9};
  auto whole = ReadTokenCache(prefix_, o);
  ASSERT_TRUE(whole.ok());
  auto order = DocIds(DrainInts(MakeIt(*whole, 2).get(), 0));
  ASSERT_EQ(order.size(), static_cast<size_t>(kDocs));
  EXPECT_NE(order, DocIds(DrainInts(MakeIt(*ReadTokenCache(prefix_), 2).get(), 0)));

  std::multiset<int32_t> seen;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    o.rank = rank;
    o.world_size = 3;
    auto ds = ReadTokenCache(prefix_, o);
    ASSERT_TRUE(ds.ok());
    auto first = MakeIt(*ds, 2);
    auto head = DocIds(DrainInts(first.get(), 0, 4));
    Result<std::string> state = first->Save();
    ASSERT_TRUE(state.ok());
    auto rest_direct = DocIds(DrainInts(first.get(), 0));
    auto second = MakeIt(*ds, 2);
    ASSERT_TRUE(second->Restore(*state).ok());
    auto rest = DocIds(DrainInts(second.get(), 0));
    EXPECT_EQ(rest, rest_direct) << "rank " << rank;
    seen.insert(head.begin(), head.end());
    seen.insert(rest.begin(), rest.end());
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kDocs - kDocs % 3)) << "ranks drop the remainder";
  EXPECT_EQ(std::set<int32_t>(seen.begin(), seen.end()).size(), seen.size()) << "no repeats";
}

TEST_F(TextTokenCacheSource, MissingCacheIsNotFound) {
  auto ds = ReadTokenCache((dir_ / "nope").string());
  EXPECT_FALSE(ds.ok());
}

}  // namespace
}  // namespace sluice::text

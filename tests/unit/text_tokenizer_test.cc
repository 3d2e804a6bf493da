#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "sluice/io/file_system.h"
#include "sluice/text/encode_documents.h"
#include "sluice/text/tokenizer.h"
#include "unit/text_test_data.h"

namespace sluice::text {
namespace {

using testing::TextTestData;

std::unique_ptr<Tokenizer> Load(const char* model, const TokenizerOptions& options = {}) {
  auto tok = Tokenizer::Open(io::LocalFileSystem(), TextTestData(model), options);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(*tok) : nullptr;
}

std::vector<int32_t> Ids(const Tokenizer& tok, std::string_view text) {
  std::vector<int32_t> ids;
  EXPECT_TRUE(tok.Encode(text, &ids).ok());
  return ids;
}

// Lines that exercise the edges: empty, whitespace, invalid UTF-8 of every kind, long.
std::vector<std::string> AwkwardLines() {
  std::vector<std::string> lines = {"",
                                    " ",
                                    "hello world",
                                    "ab\xff"
                                    "cd",
                                    "\xc3",
                                    "\xed\xa0\x80x",
                                    "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87",
                                    "tab\there\r",
                                    std::string("nul\0byte", 8)};
  std::string long_line;
  for (int i = 0; i < 2000; ++i) long_line += "memory barrier " + std::to_string(i) + " ";
  lines.push_back(long_line);
  for (int i = 0; i < 500; ++i) lines.push_back("line " + std::to_string(i * 7919 % 1000));
  return lines;
}

TEST(Tokenizer, IdsEqualSentencePiecePython) {
  auto tok = Load(testing::kUnigramModel);
  ASSERT_NE(tok, nullptr);
  // Expected ids from python3-sentencepiece 0.1.97: sp.encode(b"...") with the same model.
  EXPECT_EQ(Ids(*tok, "hello world"), (std::vector<int32_t>{3, 32, 5, 137, 9, 3, 31, 42, 12, 10}));
  EXPECT_EQ(Ids(*tok,
                "ab\xff"
                "cd"),
            (std::vector<int32_t>{17, 35, 0, 15, 10}));
  EXPECT_EQ(Ids(*tok, "  leading and trailing  "),
            (std::vector<int32_t>{3, 48, 11, 10, 26, 43, 224, 11, 87, 26}));
  EXPECT_TRUE(Ids(*tok, "").empty());
  EXPECT_EQ(tok->vocab_size(), 400);
  EXPECT_EQ(tok->unk_id(), 0);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->pad_id(), -1);
}

TEST(Tokenizer, AddBosEosLikeSentencePiece) {
  auto tok = Load(testing::kUnigramModel, {.add_bos = true, .add_eos = true});
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Ids(*tok, "hello world"),
            (std::vector<int32_t>{1, 3, 32, 5, 137, 9, 3, 31, 42, 12, 10, 2}));
}

TEST(Tokenizer, NotAModelIsDataLossNamingTheFile) {
  auto fs = io::NewMemoryFileSystem();
  ASSERT_TRUE(fs->WriteAll("/garbage.model", "this is not a protobuf \xff\xff\xff").ok());
  auto tok = Tokenizer::Open(fs.get(), "/garbage.model");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(tok.status().message().find("/garbage.model"), std::string::npos)
      << tok.status().ToString();
}

TEST(Tokenizer, TruncatedModelIsDataLoss) {
  auto bytes = io::LocalFileSystem()->ReadAll(TextTestData(testing::kUnigramModel));
  ASSERT_TRUE(bytes.ok());
  auto tok = Tokenizer::FromModelProto(ByteView(*bytes).substr(0, bytes->size() / 2), {}, "half");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kDataLoss);
}

TEST(Tokenizer, MissingModelIsNotFound) {
  auto tok = Tokenizer::Open(io::LocalFileSystem(), "/nonexistent/sluice/x.model");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
}

TEST(Tokenizer, BatchEqualsSingleForAnyThreadCount) {
  for (const char* model : {testing::kUnigramModel, testing::kByteFallbackModel}) {
    auto tok = Load(model);
    ASSERT_NE(tok, nullptr);
    const auto lines = AwkwardLines();
    std::vector<std::string_view> views(lines.begin(), lines.end());
    for (size_t threads : {0, 1, 2, 3, 8}) {
      RaggedIds out;
      ASSERT_TRUE(tok->EncodeBatch(views, threads, &out).ok());
      ASSERT_EQ(out.size(), lines.size());
      for (size_t i = 0; i < lines.size(); ++i) {
        auto doc = out[i];
        ASSERT_EQ(std::vector<int32_t>(doc.begin(), doc.end()), Ids(*tok, lines[i]))
            << model << " threads=" << threads << " line " << i;
      }
    }
  }
}

TEST(Tokenizer, BatchOfNothingIsEmpty) {
  auto tok = Load(testing::kUnigramModel);
  ASSERT_NE(tok, nullptr);
  RaggedIds out;
  out.Append(std::vector<int32_t>{1, 2, 3});  // stale content must go
  ASSERT_TRUE(tok->EncodeBatch({}, 4, &out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(out.total_ids(), 0u);
}

TEST(Tokenizer, ConcurrentEncodeOnOneTokenizer) {
  auto tok = Load(testing::kUnigramModel);
  ASSERT_NE(tok, nullptr);
  const auto lines = AwkwardLines();
  std::vector<std::vector<int32_t>> expected;
  for (const auto& l : lines) expected.push_back(Ids(*tok, l));
  std::vector<int> mismatches(4, 0);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::vector<int32_t> ids;
        for (size_t i = 0; i < lines.size(); ++i) {
          const size_t k = (i * 31 + static_cast<size_t>(t) * 17) % lines.size();
          if (!tok->Encode(lines[k], &ids).ok() || ids != expected[k]) ++mismatches[t];
        }
      });
    }
  }
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(Tokenizer, DecodeRoundTripsValidText) {
  auto tok = Load(testing::kByteFallbackModel);
  ASSERT_NE(tok, nullptr);
  const std::string text =
      "The memory-barriers.txt file (see \xc2\xa7"
      "3) \xe4\xb8\xad";
  auto back = tok->Decode(Ids(*tok, text));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
}

TEST(Tokenizer, DecodeRejectsOutOfRangeId) {
  auto tok = Load(testing::kUnigramModel);
  ASSERT_NE(tok, nullptr);
  auto back = tok->Decode(std::vector<int32_t>{3, 400});
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tok->IdToPiece(-1), "");
  EXPECT_EQ(tok->IdToPiece(3), "\xe2\x96\x81");
}

TEST(EncodeDocuments, RaiseNamesFileOffsetAndLineOfTheBadByte) {
  auto tok = Load(testing::kUnigramModel);
  ASSERT_NE(tok, nullptr);
  const std::string data =
      "good line\n\nfirst\nsec\xff"
      "ond\n";
  const auto docs = SplitText(data, TextUnit::kParagraph);
  RaggedIds out;
  Status st = EncodeDocuments(*tok, "corpus.txt", docs, {}, &out, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_EQ(st.message(), "corpus.txt: offset 20: line 4: invalid UTF-8 (byte 0xff at column 4)");
}

TEST(EncodeDocuments, SkipListsBadDocumentsAndEncodesTheRest) {
  auto tok = Load(testing::kUnigramModel);
  ASSERT_NE(tok, nullptr);
  const std::string data =
      "hello world\nab\xff"
      "cd\n\nlast line\n";
  const auto docs = SplitText(data, TextUnit::kLine);
  RaggedIds out;
  std::vector<TextDocument> skipped;
  ASSERT_TRUE(EncodeDocuments(*tok, "f", docs,
                              {.invalid_utf8 = InvalidUtf8Policy::kSkip, .threads = 2}, &out,
                              &skipped)
                  .ok());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].line, 2u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(out[0].begin(), out[0].end()), Ids(*tok, "hello world"));
  EXPECT_TRUE(out[1].empty());
  EXPECT_EQ(std::vector<int32_t>(out[2].begin(), out[2].end()), Ids(*tok, "last line"));
}

TEST(EncodeDocuments, ReplaceGivesSentencePieceIds) {
  auto tok = Load(testing::kUnigramModel);
  ASSERT_NE(tok, nullptr);
  const auto docs = SplitText(
      "ab\xff"
      "cd",
      TextUnit::kLine);
  RaggedIds out;
  ASSERT_TRUE(
      EncodeDocuments(*tok, "f", docs, {.invalid_utf8 = InvalidUtf8Policy::kReplace}, &out, nullptr)
          .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::vector<int32_t>(out[0].begin(), out[0].end()),
            (std::vector<int32_t>{17, 35, 0, 15, 10}));
}

}  // namespace
}  // namespace sluice::text

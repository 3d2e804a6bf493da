#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/io/file_system.h"
#include "sluice/text/token_cache.h"

namespace sluice::text {
namespace {

using Docs = std::vector<std::vector<int32_t>>;

Docs SampleDocs(int32_t vocab) {
  Docs docs = {{1, 2, 3}, {}, {vocab - 1}, {0, 0, 7, 9}};
  for (int d = 0; d < 50; ++d) {
    std::vector<int32_t> doc;
    for (int k = 0; k < d * 3; ++k) doc.push_back((d * 7919 + k * 104729) % vocab);
    docs.push_back(doc);
  }
  return docs;
}

Status WriteCache(io::FileSystem* fs, const std::string& prefix, uint64_t vocab, const Docs& docs,
                  size_t buffer_bytes = 64) {
  SLUICE_ASSIGN_OR_RETURN(
      auto w,
      TokenCacheWriter::Create(fs, prefix, vocab, {.write = {}, .buffer_bytes = buffer_bytes}));
  for (const auto& d : docs) SLUICE_RETURN_IF_ERROR(w->Append(d));
  return w->Close();
}

Docs ReadAllDocs(const TokenCacheReader& r) {
  Docs out(r.size());
  for (uint64_t i = 0; i < r.size(); ++i) r.CopyDocument(i, &out[i]);
  return out;
}

class TokenCacheTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "local") {
      char tmpl[] = "/tmp/sluice_token_cache_XXXXXX";
      ASSERT_NE(::mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      fs_ = io::LocalFileSystem();
    } else {
      owned_ = io::NewMemoryFileSystem();
      fs_ = owned_.get();
      dir_ = "/mem";
    }
    prefix_ = dir_ + "/cache";
  }
  void TearDown() override {
    if (GetParam() == "local") std::filesystem::remove_all(dir_);
  }

  // Rewrites bytes of a file in place (through the FileSystem, atomically).
  void Patch(const std::string& path, size_t offset, std::string_view bytes) {
    auto data = fs_->ReadAll(path);
    ASSERT_TRUE(data.ok());
    data->replace(offset, bytes.size(), bytes);
    ASSERT_TRUE(fs_->WriteAll(path, *data).ok());
  }
  void Truncate(const std::string& path, size_t size) {
    auto data = fs_->ReadAll(path);
    ASSERT_TRUE(data.ok());
    data->resize(size);
    ASSERT_TRUE(fs_->WriteAll(path, *data).ok());
  }
  // Opens the cache expecting DataLoss whose message contains `file` and `needle`.
  void ExpectDataLoss(const std::string& file, const std::string& needle) {
    auto r = TokenCacheReader::Open(fs_, prefix_);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
    EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
  }
  std::string Idx() const { return TokenCacheIndexPath(prefix_); }
  std::string Bin() const { return TokenCacheDataPath(prefix_); }

  std::unique_ptr<io::FileSystem> owned_;
  io::FileSystem* fs_ = nullptr;
  std::string dir_, prefix_;
};

TEST_P(TokenCacheTest, RoundTripUint16) {
  const Docs docs = SampleDocs(32000);
  ASSERT_TRUE(WriteCache(fs_, prefix_, 32000, docs).ok());
  auto r = TokenCacheReader::Open(fs_, prefix_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->width(), TokenWidth::k16);
  EXPECT_EQ((*r)->is_mapped(), GetParam() == "local");
  EXPECT_EQ(ReadAllDocs(**r), docs);
  EXPECT_EQ((*r)->Document16(3).size(), 4u);
  EXPECT_EQ((*r)->Document16(3)[2], 7);
  EXPECT_TRUE((*r)->VerifyIds(32000).ok());
}

TEST_P(TokenCacheTest, RoundTripWideVocabulary) {
  const Docs docs = SampleDocs(250000);  // > 65536: 32-bit ids
  ASSERT_TRUE(WriteCache(fs_, prefix_, 250000, docs).ok());
  auto r = TokenCacheReader::Open(fs_, prefix_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->width(), TokenWidth::k32);
  EXPECT_EQ(ReadAllDocs(**r), docs);
  uint64_t total = 0;
  for (const auto& d : docs) total += d.size();
  EXPECT_EQ((*r)->total_tokens(), total);
}

TEST_P(TokenCacheTest, EmptyCacheRoundTrips) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, {}).ok());
  auto r = TokenCacheReader::Open(fs_, prefix_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->size(), 0u);
  EXPECT_EQ((*r)->total_tokens(), 0u);
}

// The bytes Megatron-LM's _IndexWriter produces for the same documents (docs/text-format.md).
TEST_P(TokenCacheTest, IndexIsMegatronLayoutByteForByte) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 1000, {{5, 6, 7}, {}, {999}}).ok());
  std::string expect("MMIDIDX\0\0", 9);
  PutFixed64(&expect, 1);
  expect.push_back(8);  // uint16
  PutFixed64(&expect, 3);
  PutFixed64(&expect, 4);
  for (uint32_t len : {3, 0, 1}) PutFixed32(&expect, len);
  for (uint64_t off : {0, 6, 6}) PutFixed64(&expect, off);
  for (uint64_t b : {0, 1, 2, 3}) PutFixed64(&expect, b);
  EXPECT_EQ(*fs_->ReadAll(Idx()), expect);
  EXPECT_EQ(*fs_->ReadAll(Bin()), std::string("\x05\0\x06\0\x07\0\xe7\x03", 8));
}

TEST_P(TokenCacheTest, IdOutsideVocabularyFailsAndLeavesNothing) {
  auto w = TokenCacheWriter::Create(fs_, prefix_, 100);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append(std::vector<int32_t>{1, 2}).ok());
  Status st = (*w)->Append(std::vector<int32_t>{3, 100});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("document 1 position 1: id 100"), std::string::npos) << st.ToString();
  EXPECT_EQ((*w)->Append(std::vector<int32_t>{1}), st);  // sticky
  EXPECT_EQ((*w)->Close(), st);
  EXPECT_FALSE(fs_->Exists(Bin()));
  EXPECT_FALSE(fs_->Exists(Idx()));
  std::vector<int64_t> negative = {-1};
  auto w2 = TokenCacheWriter::Create(fs_, prefix_, 100);
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ((*w2)->Append(std::span<const int64_t>(negative)).code(), StatusCode::kInvalidArgument);
}

TEST_P(TokenCacheTest, UnclosedWriterLeavesNothing) {
  {
    auto w = TokenCacheWriter::Create(fs_, prefix_, 100);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(std::vector<int32_t>(1000, 5)).ok());
  }
  EXPECT_FALSE(fs_->Exists(Bin()));
  EXPECT_FALSE(fs_->Exists(Idx()));
}

TEST_P(TokenCacheTest, CreateRemovesStaleIndex) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, {{1, 2, 3}}).ok());
  auto w = TokenCacheWriter::Create(fs_, prefix_, 100);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(fs_->Exists(Idx()));  // a crash now cannot pair the old index with new ids
  ASSERT_TRUE((*w)->Append(std::vector<int32_t>{4}).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto r = TokenCacheReader::Open(fs_, prefix_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ReadAllDocs(**r), (Docs{{4}}));
}

TEST_P(TokenCacheTest, MissingIndexIsNotFound) {
  ASSERT_TRUE(fs_->WriteAll(Bin(), "").ok());
  auto r = TokenCacheReader::Open(fs_, prefix_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST_P(TokenCacheTest, TruncatedHeader) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  Truncate(Idx(), 20);
  ExpectDataLoss(Idx(), "offset 0: 20 bytes, too short");
}

TEST_P(TokenCacheTest, BadMagic) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  Patch(Idx(), 0, "XX");
  ExpectDataLoss(Idx(), "offset 0: bad magic");
}

TEST_P(TokenCacheTest, BadVersionAndDtype) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  Patch(Idx(), 9, "\x02");
  ExpectDataLoss(Idx(), "offset 9: unsupported version 2");
  Patch(Idx(), 9, "\x01");
  Patch(Idx(), 17, "\x05");  // int64: Megatron allows it, sluice never writes it
  ExpectDataLoss(Idx(), "offset 17: unsupported dtype code 5");
}

TEST_P(TokenCacheTest, TruncatedIndexBody) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  auto size = fs_->Stat(Idx());
  Truncate(Idx(), size->size - 8);
  ExpectDataLoss(Idx(), "offset 18:");
}

TEST_P(TokenCacheTest, HugeCountDoesNotOverflow) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  Patch(Idx(), 18, std::string(8, '\xff'));
  ExpectDataLoss(Idx(), "offset 18:");
}

TEST_P(TokenCacheTest, OffsetThatSkipsBytes) {
  const Docs docs = SampleDocs(100);
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, docs).ok());
  const size_t n = docs.size();
  const size_t field = kTokenCacheHeaderBytes + 4 * n + 8 * 5;  // offset of sequence 5
  char bad[8];
  EncodeFixed64(bad, 1 << 20);
  Patch(Idx(), field, std::string_view(bad, 8));
  ExpectDataLoss(Idx(), "offset " + std::to_string(field) + ": sequence 5: byte offset 1048576");
}

TEST_P(TokenCacheTest, NegativeLength) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  Patch(Idx(), kTokenCacheHeaderBytes + 4 * 2, "\xff\xff\xff\xff");
  ExpectDataLoss(Idx(), "offset 42: sequence 2: negative length -1");
}

TEST_P(TokenCacheTest, TruncatedData) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  auto size = fs_->Stat(Bin());
  Truncate(Bin(), size->size - 2);
  ExpectDataLoss(Bin(), "describes " + std::to_string(size->size) + " bytes of ids");
}

TEST_P(TokenCacheTest, DataLongerThanIndex) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, SampleDocs(100)).ok());
  auto data = fs_->ReadAll(Bin());
  ASSERT_TRUE(fs_->WriteAll(Bin(), *data + "\x01\x00").ok());
  ExpectDataLoss(Bin(), "but the file has");
}

TEST_P(TokenCacheTest, BadDocumentBoundary) {
  const Docs docs = SampleDocs(100);
  ASSERT_TRUE(WriteCache(fs_, prefix_, 100, docs).ok());
  const size_t n = docs.size();
  const size_t last = kTokenCacheHeaderBytes + 12 * n + 8 * n;  // the final boundary
  Patch(Idx(), last, std::string(1, '\x00'));
  ExpectDataLoss(Idx(), "offset " + std::to_string(last) + ": document boundary");
}

TEST_P(TokenCacheTest, VerifyIdsNamesOffsetOfBadId) {
  ASSERT_TRUE(WriteCache(fs_, prefix_, 1000, {{1, 2}, {3, 999}}).ok());
  auto r = TokenCacheReader::Open(fs_, prefix_);
  ASSERT_TRUE(r.ok());
  Status st = (*r)->VerifyIds(500);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find(Bin() + ": offset 6: id 999"), std::string::npos) << st.ToString();
}

// Megatron's BERT-style datasets group several sequences (sentences) into one document;
// sluice reads such a file as its sequences.
TEST_P(TokenCacheTest, ReadsMegatronSentenceGroups) {
  std::string idx(kTokenCacheMagic);
  PutFixed64(&idx, 1);
  idx.push_back(static_cast<char>(kTokenDtypeInt32));
  PutFixed64(&idx, 3);  // sequences
  PutFixed64(&idx, 2);  // boundaries: one document of three sentences
  for (uint32_t len : {2, 1, 1}) PutFixed32(&idx, len);
  for (uint64_t off : {0, 8, 12}) PutFixed64(&idx, off);
  for (uint64_t b : {0, 3}) PutFixed64(&idx, b);
  std::string bin;
  for (uint32_t id : {70000, 1, 2, 3}) PutFixed32(&bin, id);
  ASSERT_TRUE(fs_->WriteAll(Idx(), idx).ok());
  ASSERT_TRUE(fs_->WriteAll(Bin(), bin).ok());
  auto r = TokenCacheReader::Open(fs_, prefix_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->width(), TokenWidth::k32);
  EXPECT_EQ(ReadAllDocs(**r), (Docs{{70000, 1}, {2}, {3}}));
}

INSTANTIATE_TEST_SUITE_P(Both, TokenCacheTest, ::testing::Values("local", "memory"));

TEST(TokenCache, WidthFollowsVocabulary) {
  EXPECT_EQ(TokenWidthForVocab(65536), TokenWidth::k16);
  EXPECT_EQ(TokenWidthForVocab(65537), TokenWidth::k32);
  auto fs = io::NewMemoryFileSystem();
  EXPECT_EQ(TokenCacheWriter::Create(fs.get(), "/x", 0).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::text

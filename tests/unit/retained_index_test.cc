// Index files on a remote file system are read whole at open, in one read, and served from
// memory (format/retained_index.h): a chunk's decode then reads nothing of the index; past
// the process's budget, or on local files, the index is read lazily as before; a damaged
// remote index is still reported, naming it; the copies are given back when readers close.
#include "format/retained_index.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "format/index_directory.h"
#include "sluice/format/shard_index.h"
#include "sluice/io/cache/simulated_remote.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::MakeRecords;
using testing::WriteShard;

class RetainedIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice_retained_index_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/shard.tfrecord.zst";
    records_ = MakeRecords(20000, 10, 60);
    RecordWriterOptions o;
    o.codec = Codec::kZstd;
    o.zstd_frame_bytes = 4096;  // many frames and chunks: lookups all over the index
    ASSERT_TRUE(WriteShard(io::LocalFileSystem(), path_, records_, o).ok());
    log_ = dir_ + "/reads.log";
    io::cache::SimulatedRemoteOptions remote;
    remote.name = "s3";  // counts as remote
    remote.log_path = log_;
    remote_ = std::make_unique<io::cache::SimulatedRemoteFileSystem>(io::LocalFileSystem(), remote);
    budget_ = SetRetainedIndexBudget(uint64_t{64} << 20);
  }
  void TearDown() override {
    SetRetainedIndexBudget(budget_);
    std::filesystem::remove_all(dir_);
  }

  // Reads of the index file so far, from the read log.
  uint64_t IndexReads() const {
    std::ifstream log(log_);
    std::string path;
    uint64_t offset = 0, bytes = 0, n = 0;
    while (log >> path >> offset >> bytes) n += path == ShardIndex::IndexPathFor(path_);
    return n;
  }
  uint64_t IndexBytes() const {
    return std::filesystem::file_size(ShardIndex::IndexPathFor(path_));
  }

  // Every chunk fetched, decoded and read back through `fs`; the records must be the ones
  // written.
  void ReadEveryChunk(io::FileSystem* fs) {
    ShardReaderOptions options;
    options.chunk_bytes = 8192;  // ~2 frames a chunk
    auto reader = ShardReader::Open(fs, path_, options);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    ASSERT_GT((*reader)->chunks().size(), 20u);
    std::string scratch;
    for (const ShardChunk& chunk : (*reader)->chunks()) {
      std::string fetched(chunk.file_bytes, '\0');
      auto got = (*reader)->file().Read(chunk.file_offset, chunk.file_bytes, fetched.data());
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      fetched.assign(got->data(), got->size());
      DecodedChunk decoded;
      ASSERT_TRUE((*reader)->DecodeChunk(chunk, std::move(fetched), &decoded).ok());
      for (uint64_t i = chunk.first_record; i < chunk.first_record + chunk.records; ++i) {
        Result<ByteView> r = (*reader)->RecordInChunk(i, chunk, decoded, &scratch);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(std::string(*r), records_[i]) << "record " << i;
      }
    }
    if (fs == remote_.get()) held_while_open_ = RetainedIndexBytes();
  }

  std::string dir_, path_, log_;
  std::vector<std::string> records_;
  std::unique_ptr<io::cache::SimulatedRemoteFileSystem> remote_;
  uint64_t budget_ = 0;
  uint64_t held_while_open_ = 0;
};

TEST_F(RetainedIndex, RemoteIndexReadMoreThanOnceOrKeptAfterClose) {
  ReadEveryChunk(remote_.get());
  EXPECT_EQ(IndexReads(), 1u);  // the whole file, at open
  EXPECT_EQ(held_while_open_, IndexBytes());
  EXPECT_EQ(RetainedIndexBytes(), 0u);  // given back with the reader
}

TEST_F(RetainedIndex, RemoteIndexHeldPastTheBudget) {
  SetRetainedIndexBudget(IndexBytes() - 1);
  ReadEveryChunk(remote_.get());
  EXPECT_GT(IndexReads(), 2u);  // its header, the scan, then spans as chunks need them
  EXPECT_EQ(held_while_open_, 0u);
}

TEST_F(RetainedIndex, LocalIndexIsRetained) {
  auto reader = ShardReader::Open(io::LocalFileSystem(), path_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(RetainedIndexBytes(), 0u);
}

TEST_F(RetainedIndex, DamagedRemoteIndexGoesUnreported) {
  const std::string index = ShardIndex::IndexPathFor(path_);
  {
    std::fstream f(index, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(IndexBytes() / 2));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(static_cast<std::streamoff>(IndexBytes() / 2));
    f.write(&c, 1);
  }
  auto opened = OpenIndexDirectory(remote_.get(), index, nullptr);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find(index), std::string::npos)
      << opened.status().ToString();
  EXPECT_EQ(RetainedIndexBytes(), 0u);
}

}  // namespace
}  // namespace sluice::format

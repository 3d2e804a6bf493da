// The cache's page store, chunk file format, ledger and per-chunk node locks, on a real
// directory: damaged and torn files are reported, never returned.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "io/cache/chunk_file.h"
#include "io/cache/chunk_locks.h"
#include "io/cache/chunk_store.h"
#include "io/cache/ledger.h"

namespace sluice::io::cache {
namespace {

std::string Payload(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7 + (i >> 9));
  return s;
}

class CacheStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice_cache_store_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    store_ = std::make_unique<ChunkStore>(dir_ + "/chunks");
    ASSERT_TRUE(store_->Init().ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ChunkId Put(const std::string& key, const std::string& payload) {
    ChunkId id = ChunkIdOf(key);
    auto staged = store_->Stage(id, key, payload);
    EXPECT_TRUE(staged.ok()) << staged.status().ToString();
    EXPECT_TRUE(store_->Publish(*staged).ok());
    return id;
  }
  void Patch(const ChunkId& id, uint64_t offset, char byte) {
    std::fstream f(store_->PathOf(id), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(byte);
  }

  std::string dir_;
  std::unique_ptr<ChunkStore> store_;
};

TEST(ChunkFile, HeaderRoundTripsAndNamesItsKey) {
  std::string payload = Payload(200000, 1);
  std::string h = EncodeChunkHeader("k@0+200000", payload);
  EXPECT_EQ(h.size(), ChunkHeaderBytes(10, payload.size()));
  auto header = DecodeChunkHeader(h, "k@0+200000", payload.size(), "f");
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->page_crcs.size(), 4u);
  EXPECT_TRUE(VerifyChunkPages(*header, 0, payload, "f").ok());
  EXPECT_TRUE(VerifyChunkPages(*header, 3, payload.substr(3 * kChunkPageBytes), "f").ok());
}

TEST(ChunkFile, AnotherKeyOrLengthIsDamage) {
  std::string payload = Payload(100, 2);
  std::string h = EncodeChunkHeader("key-a", payload);
  EXPECT_EQ(DecodeChunkHeader(h, "key-b", 100, "f").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeChunkHeader(h, "key-a", 101, "f").status().code(), StatusCode::kDataLoss);
}

TEST(ChunkFile, EveryFlippedHeaderByteIsCaught) {
  std::string payload = Payload(70000, 3);
  std::string h = EncodeChunkHeader("key", payload);
  for (size_t i = 0; i < h.size(); ++i) {
    std::string bad = h;
    bad[i] ^= 0x20;
    EXPECT_FALSE(DecodeChunkHeader(bad, "key", payload.size(), "f").ok()) << "byte " << i;
  }
  EXPECT_FALSE(DecodeChunkHeader(h.substr(0, h.size() - 1), "key", payload.size(), "f").ok());
}

TEST(ChunkFile, PageCrcMismatchNamesTheOffset) {
  std::string payload = Payload(3 * kChunkPageBytes, 4);
  auto header = DecodeChunkHeader(EncodeChunkHeader("k", payload), "k", payload.size(), "f");
  ASSERT_TRUE(header.ok());
  payload[kChunkPageBytes + 5] ^= 1;
  Status s = VerifyChunkPages(*header, 0, payload, "cache/f");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("cache/f:" + std::to_string(header->header_bytes + kChunkPageBytes)),
            std::string::npos)
      << s.message();
}

TEST_F(CacheStoreTest, ReadsWholeChunksAndRanges) {
  std::string payload = Payload(150000, 5);
  ChunkId id = Put("key", payload);
  EXPECT_EQ(*store_->Read(id, "key", payload.size(), 0, payload.size()), payload);
  EXPECT_EQ(*store_->Read(id, "key", payload.size(), 65530, 20), payload.substr(65530, 20));
  EXPECT_EQ(*store_->Read(id, "key", payload.size(), 149990, 100), payload.substr(149990));
  EXPECT_EQ(store_->Read(ChunkIdOf("other"), "other", 1, 0, 1).status().code(),
            StatusCode::kNotFound);
}

TEST_F(CacheStoreTest, DamagedPayloadIsNeverReturned) {
  std::string payload = Payload(150000, 6);
  ChunkId id = Put("key", payload);
  const uint64_t header = ChunkHeaderBytes(3, payload.size());
  Patch(id, header + 100000, static_cast<char>(payload[100000] ^ 0x40));
  EXPECT_EQ(store_->Read(id, "key", payload.size(), 0, payload.size()).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(store_->Read(id, "key", payload.size(), 99990, 20).status().code(),
            StatusCode::kDataLoss);
  // Pages that were not damaged still read.
  EXPECT_EQ(*store_->Read(id, "key", payload.size(), 0, 1000), payload.substr(0, 1000));
}

TEST_F(CacheStoreTest, TornFileIsDamage) {
  std::string payload = Payload(150000, 7);
  ChunkId id = Put("key", payload);
  std::filesystem::resize_file(store_->PathOf(id), 100000);
  EXPECT_EQ(store_->Read(id, "key", payload.size(), 0, 10).status().code(), StatusCode::kDataLoss);
  std::filesystem::resize_file(store_->PathOf(id), 0);
  EXPECT_EQ(store_->Read(id, "key", payload.size(), 0, 10).status().code(), StatusCode::kDataLoss);
}

TEST_F(CacheStoreTest, StagedChunkIsInvisibleUntilPublished) {
  ChunkId id = ChunkIdOf("key");
  auto staged = store_->Stage(id, "key", "payload");
  ASSERT_TRUE(staged.ok());
  EXPECT_EQ(store_->FileBytes(id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->Scan(false)->empty());
  store_->Discard(*staged);
  EXPECT_FALSE(std::filesystem::exists(staged->temp_path));
}

TEST_F(CacheStoreTest, ScanListsChunksAndRemovesTempsOfDeadProcesses) {
  ChunkId a = Put("a", "aaaa");
  ChunkId b = Put("b", "bbbbbbbb");
  // A temporary of a process that has exited, and one of this (running) process.
  pid_t child;
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  ASSERT_EQ(::posix_spawn(&child, "/bin/true", nullptr, nullptr, argv, environ), 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  std::string dead = store_->PathOf(a) + ".tmp-" + std::to_string(child) + "-0";
  std::string live = store_->PathOf(b) + ".tmp-" + std::to_string(::getpid()) + "-9";
  std::ofstream(dead) << "partial";
  std::ofstream(live) << "partial";
  auto scan = store_->Scan(true);
  ASSERT_TRUE(scan.ok());
  ASSERT_EQ(scan->size(), 2u);
  uint64_t total = (*scan)[0].file_bytes + (*scan)[1].file_bytes;
  EXPECT_EQ(total, *store_->FileBytes(a) + *store_->FileBytes(b));
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_EQ(*store_->KeyOf(b), "b");
}

TEST_F(CacheStoreTest, DeleteReportsTheBytesFreed) {
  ChunkId a = Put("a", "aaaa");
  uint64_t bytes = *store_->FileBytes(a);
  EXPECT_EQ(*store_->Delete(a), bytes);
  EXPECT_EQ(*store_->Delete(a), 0u);
}

TEST_F(CacheStoreTest, LedgerPersistsAndADamagedOneIsFresh) {
  auto ledger = Ledger::Open(dir_ + "/ledger");
  ASSERT_TRUE(ledger.ok());
  {
    auto lock = (*ledger)->Lock();
    ASSERT_TRUE(lock.ok());
    EXPECT_TRUE(lock->fresh());
    lock->state() = LedgerState{1000, 300, 2};
    ASSERT_TRUE(lock->Save().ok());
  }
  {
    auto again = Ledger::Open(dir_ + "/ledger");
    auto lock = (*again)->Lock();
    EXPECT_FALSE(lock->fresh());
    EXPECT_EQ(lock->state().capacity, 1000u);
    EXPECT_EQ(lock->state().used, 300u);
    EXPECT_EQ(lock->state().generation, 2u);
  }
  {
    std::fstream f(dir_ + "/ledger", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('x');
  }
  auto lock = (*ledger)->Lock();
  EXPECT_TRUE(lock->fresh());
  EXPECT_EQ(lock->state().used, 0u);
}

TEST_F(CacheStoreTest, NodeLockExcludesOtherDescriptorsNotItself) {
  // Two ChunkLocks on one file behave like two processes (open file description locks).
  auto a = ChunkLocks::Open(dir_ + "/locks");
  auto b = ChunkLocks::Open(dir_ + "/locks");
  ASSERT_TRUE(a.ok() && b.ok());
  ChunkId x = ChunkIdOf("x"), y = ChunkIdOf("y");
  EXPECT_TRUE(*(*a)->TryLock(x));
  EXPECT_FALSE(*(*b)->TryLock(x));
  EXPECT_TRUE(*(*b)->TryLock(y));
  (*a)->Unlock(x);
  EXPECT_TRUE(*(*b)->TryLock(x));
  a->reset();  // a process that dies releases its locks
  (*b)->Unlock(x);
  (*b)->Unlock(y);
  auto c = ChunkLocks::Open(dir_ + "/locks");
  EXPECT_TRUE(*(*c)->TryLock(x));
}

}  // namespace
}  // namespace sluice::io::cache

// The cache coordinator through CachedFileSystem: correct bytes, single flight within a process
// and across "processes" (two Cache objects on one directory hold separate locks, as two
// processes do), damaged files refetched, restart, capacity, clear, errors, cancellation.
#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "cache_test_util.h"
#include "io/cache/chunk_file.h"
#include "io/cache/chunk_store.h"

namespace sluice::io::cache {
namespace {

using CacheTest = CacheFixture;

SimulatedRemoteOptions Latency(double seconds) {
  SimulatedRemoteOptions o;
  o.latency_seconds = seconds;
  return o;
}

// `epochs` passes over the 8 chunks of 64 KiB of /remote/a in file order, one window each.
std::vector<PlannedRead> CyclicPlan(uint64_t epochs) {
  std::vector<PlannedRead> plan;
  for (uint64_t e = 0; e < epochs; ++e) {
    for (uint64_t i = 0; i < 8; ++i) plan.push_back({"/remote/a", i * 65536, 65536, e * 8 + i});
  }
  return plan;
}

TEST_F(CacheTest, ReadsReturnTheRemoteBytesAcrossChunkBoundaries) {
  std::string data = AddFile("a", 1000000, 1);
  auto cache = Open(Options(64 << 20, 64 << 10));
  CachedFileSystem fs(remote_.get(), cache);
  const std::pair<uint64_t, size_t> ranges[] = {{0, 10},       {65530, 20},  {100, 300000},
                                                {999990, 100}, {1000000, 5}, {0, 1000000}};
  for (auto [offset, n] : ranges) {
    auto got = ReadRange(fs, "a", offset, n);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, data.substr(std::min<size_t>(offset, data.size()), n)) << offset;
  }
  // Everything was read once from the remote, in whole blocks.
  EXPECT_EQ(remote_->bytes_read(), data.size());
}

TEST_F(CacheTest, SecondReadIsAHit) {
  std::string data = AddFile("a", 200000, 2);
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  ASSERT_EQ(*ReadRange(fs, "a", 70000, 1000), data.substr(70000, 1000));
  const uint64_t fetched = remote_->reads();
  ASSERT_EQ(*ReadRange(fs, "a", 70500, 1000), data.substr(70500, 1000));
  EXPECT_EQ(remote_->reads(), fetched);
  CacheStats s = cache->stats();
  EXPECT_EQ(s.reads, 2u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.fetched_bytes, 65536u);
}

TEST_F(CacheTest, AsyncReadsAcrossChunksArriveWhole) {
  std::string data = AddFile("a", 300000, 3);
  auto cache = Open(Options(64 << 20, 64 << 10));
  CachedFileSystem fs(remote_.get(), cache);
  auto file = fs.OpenForRead("/remote/a");
  ASSERT_TRUE(file.ok());
  std::promise<Result<std::string>> p;
  (*file)->ReadAsync(1000, 200000, [&](Result<std::string> r) { p.set_value(std::move(r)); });
  auto got = p.get_future().get();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, data.substr(1000, 200000));
  std::promise<Result<std::string>> empty;
  (*file)->ReadAsync(300000, 10, [&](Result<std::string> r) { empty.set_value(std::move(r)); });
  EXPECT_EQ(*empty.get_future().get(), "");
}

TEST_F(CacheTest, ConcurrentReadersOfOneChunkFetchItOnce) {
  std::string data = AddFile("a", 65536, 4);
  UseRemote(Latency(0.05));
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  std::vector<std::thread> readers;
  std::atomic<int> good{0};
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&, i] {
      auto got = ReadRange(fs, "a", i * 100, 100);
      if (got.ok() && *got == data.substr(i * 100, 100)) ++good;
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(good.load(), 8);
  EXPECT_EQ(remote_->reads(), 1u);
  CacheStats s = cache->stats();
  EXPECT_EQ(s.misses + s.joined + s.hits, 8u);
  EXPECT_EQ(s.misses, 1u);
}

TEST_F(CacheTest, TwoProcessesOnOneDirectoryFetchEachChunkOnce) {
  // Two Cache objects hold separate descriptors, so their node locks and ledger locks
  // exclude each other exactly as two processes' do.
  std::string data = AddFile("a", 8 * 65536, 5);
  UseRemote(Latency(0.03));
  auto c1 = Open(Options(64 << 20));
  auto c2 = Open(Options(64 << 20));
  CachedFileSystem fs1(remote_.get(), c1), fs2(remote_.get(), c2);
  std::vector<std::thread> readers;
  std::atomic<int> good{0};
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&, i] {
      CachedFileSystem& fs = i % 2 == 0 ? fs1 : fs2;
      for (int chunk = 0; chunk < 8; ++chunk) {
        uint64_t offset = ((chunk + i) % 8) * 65536 + 17 * i;
        auto got = ReadRange(fs, "a", offset, 1000);
        if (got.ok() && *got == data.substr(offset, 1000)) ++good;
      }
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(good.load(), 64);
  EXPECT_EQ(remote_->reads(), 8u);
  EXPECT_EQ(c1->stats().fetches + c2->stats().fetches, 8u);
}

TEST_F(CacheTest, DamagedCacheFileIsDroppedAndFetchedAgain) {
  std::string data = AddFile("a", 65536, 6);
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  ASSERT_EQ(*ReadRange(fs, "a", 0, 65536), data);
  cache->Drain();  // readers get their bytes before the chunk is stored
  auto chunks = ChunkStore(dir_ + "/chunks").Scan(false);
  ASSERT_EQ(chunks->size(), 1u);
  const std::string path = ChunkStore(dir_ + "/chunks").PathOf((*chunks)[0].id);
  const uint64_t file_bytes = (*chunks)[0].file_bytes;
  for (uint64_t offset : {uint64_t{40000}, uint64_t{3}, file_bytes - 1}) {
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(offset));
      f.put('\x7f');
    }
    const uint64_t before = remote_->reads();
    auto got = ReadRange(fs, "a", 0, 65536);
    cache->Drain();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, data) << "damage at " << offset;
    EXPECT_EQ(remote_->reads(), before + 1) << "damage at " << offset;
  }
  EXPECT_EQ(cache->stats().damaged, 3u);
  // The refetched chunk was stored again, intact.
  EXPECT_EQ(*ReadRange(fs, "a", 0, 65536), data);
  EXPECT_EQ(cache->stats().damaged, 3u);
}

TEST_F(CacheTest, TornCacheFileIsFetchedAgain) {
  std::string data = AddFile("a", 65536, 7);
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  ASSERT_EQ(*ReadRange(fs, "a", 0, 100), data.substr(0, 100));
  cache->Drain();
  auto chunks = ChunkStore(dir_ + "/chunks").Scan(false);
  std::filesystem::resize_file(ChunkStore(dir_ + "/chunks").PathOf((*chunks)[0].id), 1000);
  ASSERT_EQ(*ReadRange(fs, "a", 0, 100), data.substr(0, 100));
  EXPECT_EQ(remote_->reads(), 2u);
  EXPECT_EQ(cache->stats().damaged, 1u);
}

TEST_F(CacheTest, RestartReusesTheCache) {
  std::string data = AddFile("a", 10 * 65536, 8);
  {
    auto cache = Open(Options(64 << 20));
    CachedFileSystem fs(remote_.get(), cache);
    ASSERT_EQ(*ReadRange(fs, "a", 0, data.size()), data);
  }
  const uint64_t fetched = remote_->reads();
  auto cache = Open(Options(0));  // capacity: the directory's
  EXPECT_EQ(cache->capacity(), uint64_t{64} << 20);
  CachedFileSystem fs(remote_.get(), cache);
  ASSERT_EQ(*ReadRange(fs, "a", 0, data.size()), data);
  EXPECT_EQ(remote_->reads(), fetched);
  EXPECT_EQ(cache->stats().hits, 10u);
  EXPECT_EQ(cache->stats().used_bytes, PublishedBytes());
}

TEST_F(CacheTest, CapacityIsNeverExceeded) {
  std::string data = AddFile("a", 40 * 65536, 9);
  const std::string key = ChunkKey(FileIdentity("memory", "/remote/a", data.size()), 0, 65536);
  const uint64_t chunk_file = ChunkHeaderBytes(key.size(), 65536) + 65536;
  const uint64_t capacity = 5 * chunk_file + 100;
  auto cache = Open(Options(capacity));
  CachedFileSystem fs(remote_.get(), cache);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 40; ++i) {
      ASSERT_EQ(*ReadRange(fs, "a", i * 65536 + 10, 10), data.substr(i * 65536 + 10, 10));
      EXPECT_LE(PublishedBytes(), capacity);
    }
  }
  cache->Drain();
  CacheStats s = cache->stats();
  EXPECT_EQ(s.used_bytes, PublishedBytes());
  EXPECT_GT(s.evictions, 0u);
  EXPECT_LE(s.used_bytes, capacity);
}

TEST_F(CacheTest, ProcessesSharingADirectoryNeverExceedItsCapacity) {
  std::string data = AddFile("a", 64 * 65536, 10);
  const uint64_t capacity = 6 * 65536;
  std::vector<std::shared_ptr<Cache>> caches;
  std::vector<std::unique_ptr<CachedFileSystem>> systems;
  for (int i = 0; i < 3; ++i) {
    caches.push_back(Open(Options(capacity)));
    systems.push_back(std::make_unique<CachedFileSystem>(remote_.get(), caches.back()));
  }
  std::atomic<bool> done{false};
  std::atomic<uint64_t> worst{0};
  std::thread monitor([&] {
    while (!done) worst = std::max<uint64_t>(worst, PublishedBytes());
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 6; ++t) {
    readers.emplace_back([&, t] {
      for (int i = 0; i < 64; ++i) {
        uint64_t chunk = (i * 7 + t * 13) % 64;
        (void)ReadRange(*systems[t % 3], "a", chunk * 65536, 100);
      }
    });
  }
  for (auto& r : readers) r.join();
  done = true;
  monitor.join();
  EXPECT_LE(worst.load(), capacity);
  EXPECT_LE(PublishedBytes(), capacity);
}

TEST_F(CacheTest, ChunkLargerThanTheCapacityIsServedNotStored) {
  std::string data = AddFile("a", 65536, 11);
  auto cache = Open(Options(1000));
  CachedFileSystem fs(remote_.get(), cache);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(*ReadRange(fs, "a", 0, 65536), data);
    cache->Drain();  // a read arriving while the chunk is being stored is served from memory
  }
  EXPECT_EQ(remote_->reads(), 2u);
  EXPECT_EQ(cache->stats().skipped, 2u);
  EXPECT_EQ(PublishedBytes(), 0u);
}

TEST_F(CacheTest, RemoteErrorsReachTheReaderAndAreNotCached) {
  std::string data = AddFile("a", 65536, 12);
  SimulatedRemoteOptions failing;
  failing.fail_first_reads = 1;
  UseRemote(failing);
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  auto bad = ReadRange(fs, "a", 0, 10);
  EXPECT_EQ(bad.status().code(), StatusCode::kIoError);
  EXPECT_NE(bad.status().message().find("/remote/a"), std::string::npos);
  EXPECT_EQ(*ReadRange(fs, "a", 0, 10), data.substr(0, 10));
  EXPECT_EQ(fs.OpenForRead("/remote/missing").status().code(), StatusCode::kNotFound);
}

TEST_F(CacheTest, CancelledReadCompletesWithoutWaitingForTheFetch) {
  AddFile("a", 65536, 13);
  UseRemote(Latency(1.5));
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  auto file = fs.OpenForRead("/remote/a");
  auto token = std::make_shared<CancelToken>();
  std::promise<Status> p;
  IoContext context;
  context.cancel = token;
  (*file)->ReadAsync(
      0, 10, [&](Result<std::string> r) { p.set_value(r.status()); }, context);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  token->Cancel();
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(1)), std::future_status::ready);
  EXPECT_EQ(f.get().code(), StatusCode::kCancelled);
}

TEST_F(CacheTest, HungCacheDiskMakesReadsMissNotHang) {
  std::string data = AddFile("a", 65536, 19);
  CacheOptions o = Options(64 << 20);
  o.disk_timeout_seconds = 0.2;
  auto cache = Open(o);
  CachedFileSystem fs(remote_.get(), cache);
  ASSERT_TRUE(ReadRange(fs, "a", 0, 10).ok());
  cache->Drain();
  // The chunk file becomes a FIFO nobody writes: opening it blocks, like a hung disk. A hard
  // link keeps the FIFO reachable so the test can release the stuck threads at the end.
  auto chunks = ChunkStore(dir_ + "/chunks").Scan(false);
  ASSERT_EQ(chunks->size(), 1u);
  const std::string path = ChunkStore(dir_ + "/chunks").PathOf((*chunks)[0].id);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  ASSERT_EQ(::link(path.c_str(), (dir_ + "/fifo").c_str()), 0);
  auto got = ReadRange(fs, "a", 0, 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data.substr(0, 10));
  EXPECT_GE(cache->stats().disk_timeouts, 1u);
  EXPECT_EQ(remote_->reads(), 2u);
  int release = ::open((dir_ + "/fifo").c_str(), O_RDWR);
  ASSERT_GE(release, 0);
  cache->Drain();
  cache.reset();  // joins the threads that were stuck
  ::close(release);
}

// Reading through the shared cache of a directory that cannot hold a cache.
class CacheBypassTest : public CacheFixture {
 protected:
  // Every byte comes from the remote, twice over (nothing is kept), and the stats say why.
  void ExpectBypassedReads(const CacheOptions& options, const std::string& data,
                           std::string_view reason) {
    Result<FileSystem*> cached = CachedFileSystemFor(remote_.get(), options);
    ASSERT_TRUE(cached.ok()) << cached.status().ToString();
    auto& fs = static_cast<CachedFileSystem&>(**cached);
    std::vector<uint64_t> remote_reads;
    for (int pass = 0; pass < 2; ++pass) {
      auto got = ReadRange(fs, "a", 0, data.size());
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, data);
      remote_reads.push_back(remote_->reads());
    }
    EXPECT_GT(remote_reads[0], 0u);
    EXPECT_EQ(remote_reads[1], 2 * remote_reads[0]);
    CacheStats s = fs.cache()->stats();
    EXPECT_NE(s.bypassed.find(reason), std::string::npos) << s.bypassed;
    EXPECT_NE(s.ToString().find(": bypassed, "), std::string::npos) << s.ToString();
    EXPECT_FALSE(fs.cache()->Clear().ok());
  }
};

// A cache directory on a full disk: its ledger cannot be written (/dev/full says ENOSPC).
TEST_F(CacheBypassTest, FullCacheDiskIsBypassedNotAFailedRead) {
  std::string data = AddFile("a", 3 * 65536 + 7, 31);
  ASSERT_EQ(::symlink("/dev/full", (dir_ + "/ledger").c_str()), 0);
  ExpectBypassedReads(Options(64 << 20), data, "No space left on device");
}

// A cache directory that cannot be created (a file is in the way: root ignores modes).
TEST_F(CacheBypassTest, UnwritableCacheDirIsBypassedNotAFailedRead) {
  std::string data = AddFile("a", 65536 + 9, 32);
  std::ofstream(dir_ + "/file") << "in the way";
  CacheOptions o = Options(64 << 20);
  o.dir = dir_ + "/file/cache";
  ExpectBypassedReads(o, data, dir_ + "/file");
}

TEST_F(CacheTest, ClearEmptiesTheDirectoryForEveryProcess) {
  std::string data = AddFile("a", 4 * 65536, 14);
  auto c1 = Open(Options(64 << 20));
  auto c2 = Open(Options(64 << 20));
  CachedFileSystem fs1(remote_.get(), c1), fs2(remote_.get(), c2);
  ASSERT_TRUE(ReadRange(fs1, "a", 0, data.size()).ok());
  ASSERT_TRUE(ReadRange(fs2, "a", 0, data.size()).ok());
  EXPECT_EQ(remote_->reads(), 4u);
  c1->Drain();
  c2->Drain();
  ASSERT_TRUE(c1->Clear().ok());
  EXPECT_EQ(PublishedBytes(), 0u);
  ASSERT_EQ(*ReadRange(fs2, "a", 0, data.size()), data);
  c2->Drain();
  EXPECT_EQ(remote_->reads(), 8u);
  EXPECT_EQ(c2->stats().used_bytes, PublishedBytes());
}

TEST_F(CacheTest, StartsEmptyWhenTheScanFindsMoreThanTheCapacity) {
  std::string data = AddFile("a", 8 * 65536, 15);
  {
    auto cache = Open(Options(64 << 20));
    CachedFileSystem fs(remote_.get(), cache);
    ASSERT_TRUE(ReadRange(fs, "a", 0, data.size()).ok());
  }
  std::filesystem::remove(dir_ + "/ledger");  // the capacity it was filled under is unknown
  auto cache = Open(Options(2 * 65536));
  EXPECT_EQ(PublishedBytes(), 0u);
  EXPECT_EQ(cache->stats().used_bytes, 0u);
}

TEST_F(CacheTest, ASmallerCapacityEvictsDownToIt) {
  std::string data = AddFile("a", 8 * 65536, 16);
  {
    auto cache = Open(Options(64 << 20));
    CachedFileSystem fs(remote_.get(), cache);
    ASSERT_TRUE(ReadRange(fs, "a", 0, data.size()).ok());
  }
  const uint64_t capacity = 3 * 65536 + 3 * 300;
  auto cache = Open(Options(capacity));
  EXPECT_LE(PublishedBytes(), capacity);
  EXPECT_GT(PublishedBytes(), 0u);
  EXPECT_EQ(cache->stats().used_bytes, PublishedBytes());
}

TEST_F(CacheTest, PlanPrefetchesTheNextWindow) {
  std::string data = AddFile("a", 8 * 65536, 17);
  UseRemote(Latency(0.01));
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  std::vector<PlannedRead> plan;
  for (uint64_t i = 0; i < 8; ++i) plan.push_back({"/remote/a", i * 65536, 65536, i / 4});
  ASSERT_TRUE(fs.SetPlan(plan).ok());
  // Prefetch covers the current window (0) and the next (1): every chunk, before any read.
  ASSERT_TRUE(Eventually([&] { return cache->stats().stored == 8; }));
  for (uint64_t i = 0; i < 8; ++i) {
    ASSERT_EQ(*ReadRange(fs, "a", i * 65536, 65536), data.substr(i * 65536, 65536));
  }
  CacheStats s = cache->stats();
  EXPECT_EQ(s.hits, 8u);
  EXPECT_EQ(s.prefetches, 8u);
  EXPECT_EQ(remote_->reads(), 8u);
}

// Prefetched chunks that continue one another in a file go out in one ReadRangesAsync (one
// request on S3), each still its own chunk: a plan of a's 8 chunks (a0-a3, b's 2, a4-a7)
// makes 2 calls (a0-a7: the first four extended by the planned ones after them; b0-b1), not
// 10 reads.
TEST_F(CacheTest, PrefetchFetchesAdjacentChunksOfAFileTogether) {
  std::string a = AddFile("a", 8 * 65536, 21);
  std::string b = AddFile("b", 2 * 65536, 22);
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  std::vector<PlannedRead> plan;
  for (uint64_t i = 0; i < 4; ++i) plan.push_back({"/remote/a", i * 65536, 65536, 0});
  for (uint64_t i = 0; i < 2; ++i) plan.push_back({"/remote/b", i * 65536, 65536, 0});
  for (uint64_t i = 4; i < 8; ++i) plan.push_back({"/remote/a", i * 65536, 65536, 1});
  ASSERT_TRUE(fs.SetPlan(plan).ok());
  ASSERT_TRUE(Eventually([&] { return cache->stats().stored == 10; }));
  cache->Drain();
  EXPECT_EQ(remote_->reads(), 10u);  // every chunk once
  EXPECT_EQ(remote_->bytes_read(), a.size() + b.size());
  EXPECT_EQ(remote_->range_calls(), 2u);
  for (uint64_t i = 0; i < 8; ++i) {
    ASSERT_EQ(*ReadRange(fs, "a", i * 65536, 65536), a.substr(i * 65536, 65536)) << i;
  }
  for (uint64_t i = 0; i < 2; ++i) {
    ASSERT_EQ(*ReadRange(fs, "b", i * 65536, 65536), b.substr(i * 65536, 65536)) << i;
  }
  EXPECT_EQ(cache->stats().hits, 10u);
  EXPECT_EQ(remote_->reads(), 10u);
}

// A reader's miss fetches the planned chunks that follow its chunk in the file with it, in one
// call, even when the prefetcher's slots are taken: with one slot busy on b, reading a0 brings
// a0-a3 in one ReadRangesAsync and the reads of a1-a3 fetch nothing more.
TEST_F(CacheTest, AMissFetchesThePlannedChunksAfterItWithIt) {
  std::string a = AddFile("a", 4 * 65536, 24);
  std::string b = AddFile("b", 65536, 25);
  UseRemote(Latency(0.05));
  CacheOptions o = Options(64 << 20);
  o.prefetch_fetches = 1;
  auto cache = Open(o);
  CachedFileSystem fs(remote_.get(), cache);
  std::vector<PlannedRead> plan{{"/remote/b", 0, 65536, 0}};
  for (uint64_t i = 0; i < 4; ++i) plan.push_back({"/remote/a", i * 65536, 65536, 0});
  ASSERT_TRUE(fs.SetPlan(plan).ok());  // the one prefetch slot: b
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(*ReadRange(fs, "a", i * 65536, 65536), a.substr(i * 65536, 65536)) << i;
  }
  cache->Drain();
  EXPECT_EQ(remote_->range_calls(), 1u);
  EXPECT_EQ(remote_->reads(), 5u);  // b, and a's four chunks once each
  EXPECT_EQ(cache->stats().fetches, 5u);
}

// A failed group fetch stores none of its chunks; the prefetcher starts them again and the
// reads get the remote's bytes.
TEST_F(CacheTest, AFailedGroupFetchStoresNothingAndIsFetchedAgain) {
  std::string a = AddFile("a", 4 * 65536, 23);
  SimulatedRemoteOptions failing;
  failing.fail_first_reads = 1;  // one range of the first group: the whole call fails
  UseRemote(failing);
  auto cache = Open(Options(64 << 20));
  CachedFileSystem fs(remote_.get(), cache);
  std::vector<PlannedRead> plan;
  for (uint64_t i = 0; i < 4; ++i) plan.push_back({"/remote/a", i * 65536, 65536, 0});
  ASSERT_TRUE(fs.SetPlan(plan).ok());
  ASSERT_TRUE(Eventually([&] { return cache->stats().stored == 4; }));
  cache->Drain();
  EXPECT_EQ(remote_->range_calls(), 2u);  // the failed group, then the same four again
  EXPECT_EQ(cache->stats().fetches, 4u);  // each chunk stored once, from the second call
  EXPECT_EQ(cache->stats().damaged, 0u);
  for (uint64_t i = 0; i < 4; ++i) {
    auto got = ReadRange(fs, "a", i * 65536, 65536);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, a.substr(i * 65536, 65536)) << i;
  }
  EXPECT_EQ(cache->stats().hits, 4u);
}

TEST_F(CacheTest, FutureEvictionKeepsWhatTheNextEpochNeeds) {
  // 8 chunks read in one order for 3 epochs, a cache of 4: LRU would never hit.
  std::string data = AddFile("a", 8 * 65536, 18);
  CacheOptions o = Options(4 * (65536 + 200));
  o.prefetch_fetches = 0;
  o.lag_windows = 0;
  auto cache = Open(o);
  CachedFileSystem fs(remote_.get(), cache);
  std::vector<PlannedRead> plan = CyclicPlan(3);
  ASSERT_TRUE(fs.SetPlan(plan).ok());
  for (const PlannedRead& r : plan) {
    ASSERT_TRUE(ReadRange(fs, "a", r.offset, 100).ok());
    ASSERT_TRUE(Settled(*cache));  // each store decides before the next read
  }
  CacheStats s = cache->stats();
  EXPECT_EQ(s.hits, 8u);  // what MIN gets (cache_eviction_test.cc, CyclicScan...)
  EXPECT_EQ(s.lru_hits, 0u);
  EXPECT_EQ(remote_->reads(), 16u);
}

TEST_F(CacheTest, AnIndexReadAllEpochLongIsFetchedOnceWhenPlannedChunksFillTheCache) {
  // A shard's index is read between the chunks, through a block the plan never names. Once
  // planned chunks filled the cache, the block was never kept, and each index read fetched
  // it again (11x the dataset per epoch from S3, bench/cache/rgw_bench.py).
  AddFile("a", 8 * 65536, 19);
  std::string index = AddFile("a.idx", 65536, 20);
  CacheOptions o = Options(4 * (65536 + 200));
  o.prefetch_fetches = 0;
  auto cache = Open(o);
  CachedFileSystem fs(remote_.get(), cache);
  std::vector<PlannedRead> plan = CyclicPlan(2);
  ASSERT_TRUE(fs.SetPlan(plan).ok());
  uint64_t index_fetches = 0;
  for (const PlannedRead& r : plan) {
    ASSERT_TRUE(ReadRange(fs, "a", r.offset, 100).ok());
    ASSERT_TRUE(Settled(*cache));
    const uint64_t before = remote_->reads();
    ASSERT_EQ(*ReadRange(fs, "a.idx", r.offset / 8, 100), index.substr(r.offset / 8, 100));
    ASSERT_TRUE(Settled(*cache));
    index_fetches += remote_->reads() - before;
  }
  EXPECT_EQ(index_fetches, 1u);
}

}  // namespace
}  // namespace sluice::io::cache

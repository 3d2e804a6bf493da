// Pipelines reading through the node-local cache: the same records as without it, a second
// epoch served from the cache, cache figures in stats() and the stall report, and the default
// (on for remote file systems, off for local ones).
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "pipeline_test_util.h"
#include "sluice/format/record_writer.h"
#include "sluice/io/cache/cache.h"
#include "sluice/io/cache/simulated_remote.h"

namespace sluice::pipeline {
namespace {

using testing::Drain;
using testing::IdMap;
using testing::MakeIt;
using testing::ParseId;

class CachePipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice_cache_pipeline_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    memory_ = io::NewMemoryFileSystem();
    ASSERT_TRUE(memory_->CreateDirs("/data").ok());
    int64_t id = 0;
    for (int s = 0; s < 3; ++s) {
      format::RecordWriterOptions o;
      o.codec = s == 1 ? format::Codec::kNone : format::Codec::kZstd;
      o.zstd_frame_bytes = 256;
      std::string path = "/data/part-" + std::to_string(s) + ".tfrecord";
      auto w = format::RecordWriter::Open(memory_.get(), path, o);
      ASSERT_TRUE(w.ok());
      for (int i = 0; i < 200; ++i) ASSERT_TRUE((*w)->Write(std::to_string(id++)).ok());
      ASSERT_TRUE((*w)->Close().ok());
    }
    total_ = id;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Reads /data through a simulated remote named `name`.
  Dataset Open(io::cache::SimulatedRemoteFileSystem* remote, const ReadOptions& extra) {
    ReadOptions o = extra;
    o.paths = {"/data"};
    o.fs = remote;
    auto ds = Dataset::Read(o);
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    return *ds;
  }
  std::vector<int64_t> Epoch(const Dataset& ds, PipelineStats* stats = nullptr) {
    auto it = MakeIt(ds.Shuffle({.seed = 3}).Map(ParseId, IdMap(2)).Batch(10), 2);
    std::vector<int64_t> ids = Drain(it.get());
    if (stats != nullptr) *stats = it->stats();
    return ids;
  }

  std::string dir_;
  std::unique_ptr<io::FileSystem> memory_;
  int64_t total_ = 0;
};

TEST_F(CachePipeline, SecondEpochIsServedFromTheCache) {
  io::cache::SimulatedRemoteFileSystem remote(memory_.get(), {});
  ReadOptions o;
  o.cache_dir = dir_ + "/cache";
  o.keep_decoded_chunks = false;  // else the second epoch reads nothing: its chunks are kept
  Dataset ds = Open(&remote, o);
  PipelineStats first, second;
  std::vector<int64_t> a = Epoch(ds, &first);
  ASSERT_TRUE(first.cache.has_value());
  EXPECT_GT(first.cache->reads, 0u);
  EXPECT_GT(remote.reads(), 0u);
  io::cache::CacheOptions co;
  co.dir = o.cache_dir;
  io::cache::SharedCache(co).value()->Drain();  // stores finish after readers got the bytes
  const uint64_t fetched = remote.reads();
  std::vector<int64_t> b = Epoch(ds, &second);
  EXPECT_EQ(a, b);
  std::sort(a.begin(), a.end());
  ASSERT_EQ(static_cast<int64_t>(a.size()), total_);
  for (int64_t i = 0; i < total_; ++i) EXPECT_EQ(a[static_cast<size_t>(i)], i);
  EXPECT_EQ(remote.reads(), fetched);
  ASSERT_TRUE(second.cache.has_value());
  EXPECT_EQ(second.cache->hits, second.cache->reads);  // counted per iterator
  EXPECT_GT(second.cache->reads, 0u);
  EXPECT_NE(second.Report().find("cache " + o.cache_dir + ": hit rate 100.0%"), std::string::npos)
      << second.Report();
}

// The cache is best effort: a cache directory on a full disk (its ledger cannot be written:
// /dev/full says ENOSPC) used to fail every read with "ledger: No space left on device".
TEST_F(CachePipeline, FullCacheDiskIsBypassedEveryRecordIsReadAndTheReportSaysSoOnce) {
  const std::string cache_dir = dir_ + "/cache";
  std::filesystem::create_directories(cache_dir);
  std::filesystem::create_symlink("/dev/full", cache_dir + "/ledger");
  io::cache::SimulatedRemoteFileSystem remote(memory_.get(), {});
  ReadOptions o;
  o.cache_dir = cache_dir;
  PipelineStats stats;
  std::vector<int64_t> ids = Epoch(Open(&remote, o), &stats);
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(static_cast<int64_t>(ids.size()), total_);
  for (int64_t i = 0; i < total_; ++i) EXPECT_EQ(ids[static_cast<size_t>(i)], i);
  ASSERT_TRUE(stats.cache.has_value());
  EXPECT_NE(stats.cache->bypassed.find("No space left on device"), std::string::npos)
      << stats.cache->bypassed;
  const std::string report = stats.Report();
  const std::string said = "cache " + cache_dir + ": bypassed";
  const size_t at = report.find(said);
  ASSERT_NE(at, std::string::npos) << report;
  EXPECT_EQ(report.find("bypassed", at + said.size()), std::string::npos) << report;  // once
}

TEST_F(CachePipeline, RemotePathsAreCachedByDefaultLocalOnesAreNot) {
  ::setenv("XDG_CACHE_HOME", (dir_ + "/xdg").c_str(), 1);
  io::cache::SimulatedRemoteOptions s3;
  s3.name = "s3";
  io::cache::SimulatedRemoteFileSystem remote(memory_.get(), s3), local(memory_.get(), {});
  PipelineStats stats;
  Epoch(Open(&remote, {}), &stats);
  ASSERT_TRUE(stats.cache.has_value());
  EXPECT_EQ(stats.cache->dir, dir_ + "/xdg/sluice");
  Epoch(Open(&local, {}), &stats);
  EXPECT_FALSE(stats.cache.has_value());
  ReadOptions off;
  off.cache = false;
  Epoch(Open(&remote, off), &stats);
  EXPECT_FALSE(stats.cache.has_value());
  ::unsetenv("XDG_CACHE_HOME");
}

// Two simulated nodes (a cache directory and a simulated remote each) of two ranks each read
// an epoch from cold, all four ranks at once: every chunk of the snapshot is needed by exactly
// one node and fetched from the remote by it once; a node fetches nothing else than what its
// ranks need in this epoch or, ahead, in the next (docs/cache.md, "Across nodes").
TEST_F(CachePipeline, TwoNodesOfTwoRanksFetchEachChunkOnceFromCold) {
  constexpr int kNodes = 2, kRanksPerNode = 2, kWorld = kNodes * kRanksPerNode;
  // Ranks read disjoint lanes when the world size divides the lanes (docs/order.md, "One rank
  // per chunk"), except the chunks cut by a lane boundary, read by the ranks of both lanes.
  const ShuffleOptions kOrder{.seed = 5, .lanes = 4};
  std::vector<std::unique_ptr<io::cache::SimulatedRemoteFileSystem>> remotes;
  std::vector<Dataset> nodes;
  for (int n = 0; n < kNodes; ++n) {
    io::cache::SimulatedRemoteOptions ro;
    ro.name = "s3";
    ro.log_path = dir_ + "/node" + std::to_string(n) + ".log";
    remotes.push_back(std::make_unique<io::cache::SimulatedRemoteFileSystem>(memory_.get(), ro));
    ReadOptions o;
    o.cache_dir = dir_ + "/cache" + std::to_string(n);
    o.cache_node_ranks = kRanksPerNode;
    o.chunk_bytes = 600;  // several chunks per shard
    nodes.push_back(Open(remotes.back().get(), o));
  }
  std::vector<std::vector<int64_t>> ids(kWorld);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kWorld; ++rank) {
    ranks.emplace_back([&, rank] {
      const Dataset& node = nodes[rank / kRanksPerNode];
      auto it = MakeIt(node.Shuffle(kOrder).Shard(rank, kWorld).Map(ParseId, IdMap(2)), 2);
      if (it != nullptr) ids[rank] = Drain(it.get());
    });
  }
  for (auto& t : ranks) t.join();
  std::vector<int64_t> all;
  for (const auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(static_cast<int64_t>(all.size()), total_);  // 600 records = 4 x 150
  for (int64_t i = 0; i < total_; ++i) ASSERT_EQ(all[static_cast<size_t>(i)], i);

  // What each node's ranks need in this epoch (0) and the next (1), which the cache
  // prefetches ahead near the end of this one.
  using Range = std::tuple<std::string, uint64_t, uint64_t>;  // path, offset, bytes
  std::vector<std::set<Range>> need0(kNodes), need1(kNodes);
  for (int rank = 0; rank < kWorld; ++rank) {
    const Dataset ranked = nodes[rank / kRanksPerNode].Shuffle(kOrder).Shard(rank, kWorld);
    for (uint64_t epoch : {0, 1}) {
      auto plan = ranked.ChunkPlanFor(epoch);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      ChunkNeed n;
      while (plan->Next(&n)) {
        Range r{"/data/part-" + std::to_string(n.shard) + ".tfrecord", n.info.file_offset,
                n.info.file_bytes};
        (epoch == 0 ? need0 : need1)[rank / kRanksPerNode].insert(r);
      }
    }
  }
  auto chunks = nodes[0].Chunks();
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  ASSERT_GT((*chunks)->size(), 6u);
  // Remote reads by node: whole chunks (other reads: the shards' opening, in blocks).
  std::map<Range, std::vector<int>> fetched;
  for (int n = 0; n < kNodes; ++n) {
    io::cache::CacheOptions co;
    co.dir = dir_ + "/cache" + std::to_string(n);
    io::cache::SharedCache(co).value()->Drain();  // prefetches and stores under way
    std::ifstream log(dir_ + "/node" + std::to_string(n) + ".log");
    std::string path;
    uint64_t offset = 0, bytes = 0;
    while (log >> path >> offset >> bytes) fetched[{path, offset, bytes}].push_back(n);
  }
  int shared = 0;  // chunks two nodes need
  for (uint64_t c = 0; c < (*chunks)->size(); ++c) {
    const format::ShardChunk& info = (*chunks)->Info(c);
    const Range chunk{"/data/part-" + std::to_string((*chunks)->ShardOf(c)) + ".tfrecord",
                      info.file_offset, info.file_bytes};
    std::vector<int> needed_by;
    for (int n = 0; n < kNodes; ++n) {
      if (need0[n].count(chunk)) needed_by.push_back(n);
    }
    ASSERT_GE(needed_by.size(), 1u) << "chunk " << c << " is needed by no rank";
    if (needed_by.size() > 1) ++shared;
    const std::vector<int>& by = fetched[chunk];
    for (int n : needed_by) EXPECT_EQ(std::count(by.begin(), by.end(), n), 1) << "chunk " << c;
    for (int n : by) {  // a node fetches only what its ranks need, now or next epoch
      EXPECT_TRUE(need0[n].count(chunk) || need1[n].count(chunk)) << "chunk " << c;
      EXPECT_EQ(std::count(by.begin(), by.end(), n), 1) << "chunk " << c << " node " << n;
    }
  }
  // Only the chunk cut by the boundary between lane 1 (rank 1, node 0) and lane 2 (rank 2,
  // node 1) can be needed by both nodes.
  EXPECT_LE(shared, 1);
}

// A cold read through the cache fetches each byte of a shard once: the open's header checks
// (12-byte reads) go to the remote uncached, not as a cache block of the shard that the plan's
// chunks would then fetch again under their own keys (they did: twice the bytes from S3).
TEST_F(CachePipeline, AColdEpochFetchesEachShardByteOnce) {
  io::cache::SimulatedRemoteOptions ro;
  ro.name = "s3";
  ro.log_path = dir_ + "/remote.log";
  io::cache::SimulatedRemoteFileSystem remote(memory_.get(), ro);
  ReadOptions o;
  o.cache_dir = dir_ + "/cache";
  o.chunk_bytes = 600;  // several chunks per shard
  std::vector<int64_t> ids = Epoch(Open(&remote, o));
  ASSERT_EQ(static_cast<int64_t>(ids.size()), total_);
  io::cache::CacheOptions co;
  co.dir = o.cache_dir;
  io::cache::SharedCache(co).value()->Drain();  // prefetches of the next epoch included

  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> reads;  // path -> ranges
  std::ifstream log(ro.log_path);
  std::string path;
  uint64_t offset = 0, bytes = 0;
  int header_reads = 0;
  while (log >> path >> offset >> bytes) {
    if (path.find(".tfrecord") == std::string::npos || path.find(".idx") != std::string::npos)
      continue;
    if (bytes <= 12) {  // a record header
      ++header_reads;
      continue;
    }
    reads[path].push_back({offset, bytes});
  }
  EXPECT_GE(header_reads, 3);      // at least the codec check of each shard
  EXPECT_LE(header_reads, 3 + 1);  // and the last record of the uncompressed one
  ASSERT_EQ(reads.size(), 3u);
  for (auto& [p, ranges] : reads) {
    auto size = memory_->Stat(p);
    ASSERT_TRUE(size.ok());
    std::sort(ranges.begin(), ranges.end());
    uint64_t covered = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (i > 0) {
        EXPECT_LE(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first)
            << p << ": bytes at " << ranges[i].first << " fetched twice";
      }
      covered += ranges[i].second;
    }
    EXPECT_EQ(covered, size->size) << p;
  }
}

// Prefetching belongs to the reader it plans for: once the last iterator has ended, the cache
// starts no remote read, even with a capacity of half the dataset (where the next epoch's plan
// kept prefetching and evicting after the reader had gone: issue 36, "runaway remote reads").
TEST_F(CachePipeline, NoRemoteReadStartsAfterTheLastIteratorEnds) {
  uint64_t dataset_bytes = 0;
  for (int s = 0; s < 3; ++s) {
    dataset_bytes += memory_->Stat("/data/part-" + std::to_string(s) + ".tfrecord")->size;
  }
  io::cache::SimulatedRemoteFileSystem remote(memory_.get(), {});
  ReadOptions o;
  o.cache_dir = dir_ + "/cache";
  o.cache_bytes = dataset_bytes / 2;
  o.chunk_bytes = 600;            // several chunks per shard
  o.keep_decoded_chunks = false;  // every epoch goes to the cache
  Dataset ds = Open(&remote, o);
  io::cache::CacheOptions co;
  co.dir = o.cache_dir;
  co.capacity_bytes = o.cache_bytes;
  std::shared_ptr<io::cache::Cache> cache = io::cache::SharedCache(co).value();
  for (int epoch = 0; epoch < 3; ++epoch) {
    ASSERT_EQ(static_cast<int64_t>(Epoch(ds).size()), total_) << "epoch " << epoch;
  }
  // Fetches under way when the iterator ended finish: wait (at most 5 s, no Drain: with a
  // runaway prefetch it never returns) until no byte has come for 200 ms.
  uint64_t after_end = remote.bytes_read();
  for (int quiet_ms = 0, waited_ms = 0; quiet_ms < 200 && waited_ms < 5000; waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const uint64_t now = remote.bytes_read();
    quiet_ms = now == after_end ? quiet_ms + 10 : 0;
    after_end = now;
  }
  const uint64_t prefetches = cache->stats().prefetches;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the poller runs every ms
  EXPECT_EQ(remote.bytes_read(), after_end)
      << "bytes fetched after the last iterator ended; dataset " << dataset_bytes;
  EXPECT_EQ(cache->stats().prefetches, prefetches);
}

}  // namespace
}  // namespace sluice::pipeline

// Pipelines reading through the node-local cache: the same records as without it, a second
// epoch served from the cache, cache figures in stats() and the stall report, and the default
// (on for remote file systems, off for local ones).
#include <stdlib.h>

#include <algorithm>
#include <filesystem>

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
  Dataset ds = Open(&remote, o);
  PipelineStats first, second;
  std::vector<int64_t> a = Epoch(ds, &first);
  ASSERT_TRUE(first.cache.has_value());
  EXPECT_GT(first.cache->reads, 0u);
  EXPECT_GT(remote.reads(), 0u);  // opening the shards already fetched their first chunks
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

}  // namespace
}  // namespace sluice::pipeline

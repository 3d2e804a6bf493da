// IndexDirectory (the index file read lazily through a sparse directory and the shared
// IndexBlockCache): same answers and same errors as the eager ShardIndex, bounded cache,
// concurrent lookups, and an index file changed after open.
#include "format/index_directory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <random>
#include <thread>

#include "format/framing.h"
#include "format/index_block_cache.h"
#include "sluice/base/crc32c.h"
#include "unit/publish_test_util.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::MakeRecords;
using testing::TempDir;
using testing::WriteShard;
constexpr uint64_t K = kIndexBlockEntries;
// Directory budgets per table that give spans of several blocks on small tables: 48 bytes
// is one span for the whole table (a checkpoint and the sentinel), 120 bytes up to four.
constexpr uint64_t kOneSpanBudget = 48;
constexpr uint64_t kFourSpansBudget = 120;
const std::vector<uint64_t> kBudgets = {kDefaultIndexDirectoryBytes, kFourSpansBudget,
                                        kOneSpanBudget};

void ExpectSameEntries(const IndexLookup& lazy, const ShardIndex& eager) {
  ASSERT_EQ(lazy.num_records(), eager.num_records());
  EXPECT_EQ(lazy.codec(), eager.codec());
  for (uint64_t i = 0; i < eager.num_records(); ++i) {
    IndexRecord r;
    IndexFrame f;
    ASSERT_TRUE(lazy.Locate(i, &r, &f).ok()) << i;
    const IndexRecord& want = eager.records()[i];
    const IndexFrame& want_frame = eager.frames()[want.frame];
    ASSERT_EQ(r.frame, want.frame) << i;
    ASSERT_EQ(r.offset_in_frame, want.offset_in_frame) << i;
    ASSERT_EQ(r.length, want.length) << i;
    ASSERT_EQ(f.file_offset, want_frame.file_offset) << i;
    ASSERT_EQ(f.file_bytes, want_frame.file_bytes) << i;
    ASSERT_EQ(f.uncompressed_bytes, want_frame.uncompressed_bytes) << i;
  }
}

// A valid index as any writer could make it: frames with gaps between them, records with
// gaps inside frames, frames holding several records or none, sizes of 1..4-byte varints.
ShardIndex RandomIndex(uint64_t num_frames, uint64_t num_records, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<IndexFrame> frames;
  uint64_t end = 0;
  for (uint64_t j = 0; j < num_frames; ++j) {
    uint64_t gap = rng() % 4 == 0 ? rng() % 5000 : 0;
    uint64_t bytes = 1 + rng() % (uint64_t{1} << (rng() % 22));
    // Room for the records placed in it below.
    uint64_t uncompressed = 32 * num_records + 4096 + rng() % 100000;
    frames.push_back({end + gap, bytes, uncompressed});
    end += gap + bytes;
  }
  std::vector<IndexRecord> records;
  uint32_t frame = 0;
  uint64_t at = 0;
  for (uint64_t i = 0; i < num_records; ++i) {
    if (rng() % 3 == 0 && frame + 1 < num_frames) {
      frame += 1 + static_cast<uint32_t>(rng() % std::min<uint64_t>(3, num_frames - frame - 1));
      at = 0;
    }
    uint64_t gap = rng() % 5 == 0 ? rng() % 8 : 0;
    uint64_t length = rng() % 3;  // keeps every frame's records well inside it
    records.push_back({frame, at + gap, length});
    at += gap + length + kRecordOverheadBytes;
  }
  return ShardIndex(Codec::kZstd, std::move(frames), std::move(records));
}

class IndexDirectoryTest : public ::testing::Test {
 protected:
  Result<std::unique_ptr<IndexLookup>> Open(const std::string& bytes, uint64_t cache_bytes = 0,
                                            uint64_t budget = kDefaultIndexDirectoryBytes) {
    EXPECT_TRUE(fs_->WriteAll("/x.idx", bytes).ok());
    return OpenIndexDirectory(fs_.get(), "/x.idx",
                              cache_bytes ? NewIndexBlockCache(cache_bytes) : nullptr, budget);
  }
  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
};

TEST_F(IndexDirectoryTest, VisitorSeesEveryEntryInOrderAsTheIndexHasIt) {
  for (auto [frames, records] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 0}, {1, 1}, {700, 2 * K + 17}, {5, 1000}}) {
    ShardIndex eager = RandomIndex(frames, records, static_cast<uint32_t>(frames + records));
    ASSERT_TRUE(fs_->WriteAll("/x.idx", eager.Serialize()).ok());
    std::vector<std::pair<IndexRecord, IndexFrame>> seen;
    auto lazy = OpenIndexDirectory(
        fs_.get(), "/x.idx", nullptr, kDefaultIndexDirectoryBytes, kChunkTargetBytes,
        [&](uint64_t i, const IndexRecord& r, const IndexFrame& f) {
          EXPECT_EQ(i, seen.size());
          seen.emplace_back(r, f);
        });
    ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
    ASSERT_EQ(seen.size(), eager.num_records());
    for (uint64_t i = 0; i < seen.size(); ++i) {
      const IndexRecord& want = eager.records()[i];
      const IndexFrame& want_frame = eager.frames()[want.frame];
      ASSERT_EQ(seen[i].first.frame, want.frame) << i;
      ASSERT_EQ(seen[i].first.offset_in_frame, want.offset_in_frame) << i;
      ASSERT_EQ(seen[i].first.length, want.length) << i;
      ASSERT_EQ(seen[i].second.file_offset, want_frame.file_offset) << i;
      ASSERT_EQ(seen[i].second.file_bytes, want_frame.file_bytes) << i;
    }
  }
}

TEST_F(IndexDirectoryTest, LookupEqualsParseOnRandomIndexesWithGaps) {
  const std::vector<std::pair<uint64_t, uint64_t>> shapes = {
      {0, 0},         {1, 0},     {1, 1},
      {3, 1},         {1, K - 1}, {1, K},
      {1, K + 1},     {K + 1, K}, {700, 2 * K + 17},
      {2 * K, 3 * K}, {5, 1000}};
  uint32_t seed = 0;
  for (auto [frames, records] : shapes) {
    ShardIndex eager = RandomIndex(frames, records, ++seed);
    std::string bytes = eager.Serialize();
    auto parsed = ShardIndex::Parse(bytes, "/x.idx");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    // A cache of one block: every lookup of another block reads the file again.
    for (uint64_t cache : {uint64_t{1}, kDefaultIndexCacheBytes}) {
      for (uint64_t budget : kBudgets) {
      SCOPED_TRACE(budget);
      auto lazy = Open(bytes, cache, budget);
      ASSERT_TRUE(lazy.ok()) << frames << "x" << records << ": " << lazy.status().ToString();
      ExpectSameEntries(**lazy, *parsed);
      uint64_t end =
          frames ? parsed->frames().back().file_offset + parsed->frames().back().file_bytes : 0;
      EXPECT_EQ((*lazy)->end_offset(), end);
      IndexRecord r;
      IndexFrame f;
      EXPECT_EQ((*lazy)->Locate(records, &r, &f).code(), StatusCode::kOutOfRange);
      }
    }
  }
}

// Every record alone in its frame, as sluice writes codec none (the directory then walks
// the frame table only).
ShardIndex RecordsAreFramesIndex(uint64_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<IndexFrame> frames;
  std::vector<IndexRecord> records;
  uint64_t at = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t length = rng() % 300;
    frames.push_back({at, length + kRecordOverheadBytes, length + kRecordOverheadBytes});
    records.push_back({static_cast<uint32_t>(i), 0, length});
    at += length + kRecordOverheadBytes;
  }
  return ShardIndex(Codec::kNone, std::move(frames), std::move(records));
}

// LocateRange (a chunk's records at decode) gives what Locate gives, for any range, on the
// lazy directory and on the in-memory index (the default: Locate per entry).
TEST_F(IndexDirectoryTest, LocateRangeEqualsLocateForEveryRange) {
  std::vector<ShardIndex> indexes = {RandomIndex(700, 2 * K + 17, 3), RandomIndex(5, 1000, 4),
                                     RandomIndex(1, 1, 5), RecordsAreFramesIndex(3 * K + 5, 6)};
  for (const ShardIndex& eager : indexes) {
    const uint64_t n = eager.num_records();
    std::vector<std::pair<uint64_t, uint64_t>> ranges = {{0, n}, {0, 0}, {n, 0}, {1, n - 1}};
    if (n > K + 1) ranges.insert(ranges.end(), {{K - 1, 2}, {K, K}, {3, K + 7}, {n - 1, 1}});
    for (uint64_t budget : kBudgets) {
      auto lazy = Open(eager.Serialize(), 1, budget);
      ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
      auto in_memory = NewInMemoryIndexLookup(eager);
      for (const IndexLookup* lookup : {lazy->get(), in_memory.get()}) {
        for (auto [first, count] : ranges) {
          SCOPED_TRACE(::testing::Message() << n << " records, budget " << budget << ", ["
                                            << first << ", +" << count << ")");
          uint64_t next = first;
          Status s = lookup->LocateRange(
              first, count, [&](uint64_t i, const IndexRecord& r, const IndexFrame& f) {
                ASSERT_EQ(i, next++);
                IndexRecord want;
                IndexFrame want_frame;
                ASSERT_TRUE(lookup->Locate(i, &want, &want_frame).ok());
                EXPECT_EQ(r.frame, want.frame);
                EXPECT_EQ(r.offset_in_frame, want.offset_in_frame);
                EXPECT_EQ(r.length, want.length);
                EXPECT_EQ(f.file_offset, want_frame.file_offset);
                EXPECT_EQ(f.uncompressed_bytes, want_frame.uncompressed_bytes);
              });
          ASSERT_TRUE(s.ok()) << s.ToString();
          EXPECT_EQ(next, first + count);
          // The bulk walk gives the same entries (a chunk's decode).
          std::vector<IndexLookup::RangeEntry> bulk(3);  // what it held before goes
          ASSERT_TRUE(lookup->LocateRangeInto(first, count, &bulk).ok());
          ASSERT_EQ(bulk.size(), count);
          for (uint64_t k = 0; k < count; ++k) {
            IndexRecord want;
            IndexFrame want_frame;
            ASSERT_TRUE(lookup->Locate(first + k, &want, &want_frame).ok());
            EXPECT_EQ(bulk[k].record.frame, want.frame);
            EXPECT_EQ(bulk[k].record.offset_in_frame, want.offset_in_frame);
            EXPECT_EQ(bulk[k].record.length, want.length);
            EXPECT_EQ(bulk[k].frame_file_offset, want_frame.file_offset);
          }
        }
        for (auto [first, count] : std::vector<std::pair<uint64_t, uint64_t>>{{n, 1}, {1, n}}) {
          uint64_t visited = 0;  // the entries LocateRange gives before the error
          (void)lookup->LocateRange(first, count,
                                    [&](uint64_t, const IndexRecord&, const IndexFrame&) {
                                      ++visited;
                                    });
          std::vector<IndexLookup::RangeEntry> bulk(3);
          EXPECT_EQ(lookup->LocateRangeInto(first, count, &bulk).code(), StatusCode::kOutOfRange);
          EXPECT_EQ(bulk.size(), visited);
        }
        EXPECT_EQ(lookup->LocateRange(n, 1, [](uint64_t, const IndexRecord&,
                                               const IndexFrame&) {}).code(),
                  StatusCode::kOutOfRange);
        EXPECT_EQ(lookup->LocateRange(1, n, [](uint64_t, const IndexRecord&,
                                               const IndexFrame&) {}).code(),
                  StatusCode::kOutOfRange);
      }
    }
  }
}

// Counts the reads of every file opened through it.
class ReadCounter final : public testing::ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  Result<std::unique_ptr<io::RandomAccessFile>> OpenForRead(const std::string& p) override {
    SLUICE_ASSIGN_OR_RETURN(auto file, ForwardingFileSystem::OpenForRead(p));
    return std::unique_ptr<io::RandomAccessFile>(new File(std::move(file), &reads_));
  }
  uint64_t reads() const { return reads_.load(); }

 private:
  class File final : public io::RandomAccessFile {
   public:
    File(std::unique_ptr<io::RandomAccessFile> base, std::atomic<uint64_t>* reads)
        : base_(std::move(base)), reads_(reads) {}
    const std::string& path() const override { return base_->path(); }
    uint64_t size() const override { return base_->size(); }
    Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
      reads_->fetch_add(1);
      return base_->Read(offset, n, scratch);
    }

   private:
    std::unique_ptr<io::RandomAccessFile> base_;
    std::atomic<uint64_t>* reads_;
  };
  std::atomic<uint64_t> reads_{0};
};

// A range walk reads the spans it needs in one read of the index file (a chunk's records:
// one GET from an object store, one read of a cache file), not one read per span; what it
// reads is still checked span by span.
TEST_F(IndexDirectoryTest, LocateRangeReadsTheSpansItNeedsAtOnce) {
  const uint64_t n = 40 * K + 3;  // 41 blocks, a span each (the default budget)
  ShardIndex eager = RecordsAreFramesIndex(n, 8);
  ReadCounter counter(fs_.get());
  ASSERT_TRUE(fs_->WriteAll("/x.idx", eager.Serialize()).ok());
  auto lazy = OpenIndexDirectory(&counter, "/x.idx", NewIndexBlockCache(1));
  ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
  auto none = [](uint64_t, const IndexRecord&, const IndexFrame&) {};
  for (auto [first, count] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, n}, {K + 3, 2 * K}, {5 * K - 1, 30 * K}, {n - 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << "[" << first << ", +" << count << ")");
    const uint64_t before = counter.reads();
    uint64_t next = first;
    Status s = (*lazy)->LocateRange(first, count,
                                    [&](uint64_t i, const IndexRecord& r, const IndexFrame& f) {
                                      ASSERT_EQ(i, next++);
                                      EXPECT_EQ(f.file_offset, eager.frames()[i].file_offset);
                                      EXPECT_EQ(r.length, eager.records()[i].length);
                                    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(next, first + count);
    EXPECT_EQ(counter.reads() - before, 1u);
  }
  // Lookups one by one outside a walk still read a span each (cache of two slots).
  const uint64_t before = counter.reads();
  IndexRecord r;
  IndexFrame f;
  for (uint64_t b = 0; b < 10; ++b) ASSERT_TRUE((*lazy)->Locate(b * K, &r, &f).ok());
  EXPECT_EQ(counter.reads() - before, 10u);
  EXPECT_TRUE((*lazy)->LocateRange(0, n, none).ok());
}

// Whatever the table's size, its checkpoints stay within the budget (two tables, with
// vectors reserved to size); a lookup still finds every entry.
TEST_F(IndexDirectoryTest, DirectoryStaysWithinItsBudget) {
  ShardIndex eager = RandomIndex(300 * K, 900 * K + 5, 21);
  std::string bytes = eager.Serialize();
  auto parsed = ShardIndex::Parse(bytes, "/x.idx");
  ASSERT_TRUE(parsed.ok());
  for (uint64_t budget : {uint64_t{1} << 10, uint64_t{4} << 10, uint64_t{64} << 10}) {
    SCOPED_TRACE(budget);
    auto lazy = Open(bytes, kDefaultIndexCacheBytes, budget);
    ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
    EXPECT_LE((*lazy)->memory_bytes(), 2 * budget);
    ExpectSameEntries(**lazy, *parsed);
  }
  auto whole = Open(bytes, kDefaultIndexCacheBytes, uint64_t{1} << 30);  // a span per block
  ASSERT_TRUE(whole.ok());
  const uint64_t checkpoints = (300 + 1) + (901 + 1);  // with the sentinels
  EXPECT_GE((*whole)->memory_bytes(), checkpoints * 24);
  EXPECT_LE((*whole)->memory_bytes(), (checkpoints + 2) * 24);
}

// With spans of several blocks, a lookup missing the cache walks its span to the block and
// caches the block with its start state: an index that fits the cache is read once per
// block, in any order, and lookups of a cached block need no walk.
TEST_F(IndexDirectoryTest, RandomLookupsWithSpansReadEachBlockOnceWhenTheIndexFits) {
  ShardIndex eager = RandomIndex(10 * K, 30 * K, 12);
  // Roomy: the frame and record tables' blocks (each table's in consecutive sets) then meet
  // in a set for ~0.1% of table ids, whatever tests ran before in this process.
  auto cache = NewIndexBlockCache(64 << 20);
  ASSERT_TRUE(fs_->WriteAll("/x.idx", eager.Serialize()).ok());
  auto lazy = OpenIndexDirectory(fs_.get(), "/x.idx", cache, kFourSpansBudget);
  ASSERT_TRUE(lazy.ok());
  std::mt19937 rng(3);
  IndexRecord r;
  IndexFrame f;
  for (int k = 0; k < 20000; ++k) {
    uint64_t i = rng() % (30 * K);
    ASSERT_TRUE((*lazy)->Locate(i, &r, &f).ok());
    ASSERT_EQ(r.offset_in_frame, eager.records()[i].offset_in_frame);
    ASSERT_EQ(f.file_offset, eager.frames()[r.frame].file_offset);
  }
  EXPECT_EQ(cache->stats().blocks, 40u);
  EXPECT_EQ(cache->stats().misses, 40u);
}

TEST_F(IndexDirectoryTest, ShardReaderLocateEqualsEagerIndexForEveryRecord) {
  for (Codec codec : {Codec::kNone, Codec::kZstd, Codec::kGzip}) {
    SCOPED_TRACE(CodecName(codec));
    auto records = MakeRecords(2 * K + 100, 0, 400, static_cast<uint32_t>(codec) + 7);
    records[300] = std::string(70000, 'x');  // a multi-byte length varint, a frame of its own
    RecordWriterOptions o;
    o.codec = codec;
    o.zstd_frame_bytes = 2000;
    std::string path = "/s" + std::string(CodecExtension(codec));
    ASSERT_TRUE(WriteShard(fs_.get(), path, records, o).ok());
    auto eager = ShardIndex::Load(fs_.get(), path + ".idx");
    ASSERT_TRUE(eager.ok());
    for (uint64_t budget : kBudgets) {
      SCOPED_TRACE(budget);
      auto lazy = OpenIndexDirectory(fs_.get(), path + ".idx", nullptr, budget);
      ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
      ExpectSameEntries(**lazy, *eager);
      ShardReaderOptions options;
      options.index_directory_bytes = budget;
      auto reader = ShardReader::Open(fs_.get(), path, options);
      ASSERT_TRUE(reader.ok());
      std::string out;
      for (uint64_t i = records.size(); i-- > 0;) {
        ASSERT_TRUE((*reader)->Read(i, &out).ok()) << i;
        ASSERT_EQ(out, records[i]) << i;
      }
    }
  }
}

// Every error ShardIndex::Parse gives, the lazy open gives too, word for word.
TEST_F(IndexDirectoryTest, CorruptIndexGivesTheErrorsOfParse) {
  std::string good = RandomIndex(3, 40, 5).Serialize();
  std::vector<std::string> bad;
  for (size_t k = 0; k < good.size(); ++k) {  // every flipped byte (caught by the CRC)
    bad.push_back(good);
    bad.back()[k] ^= 0x01;
  }
  for (size_t n = 0; n < good.size(); ++n) bad.push_back(good.substr(0, n));  // truncated
  // Impossible contents under a valid CRC: each byte of the tables set to each of a few
  // values, resealed (bad varints, frames out of range, records outside their frames,
  // overflows, counts beyond the size, trailing bytes).
  std::string body = good.substr(0, good.size() - 4);
  auto reseal = [](std::string b) {
    PutFixed32(&b, crc32c::Mask(crc32c::Value(b)));
    return b;
  };
  for (size_t k = 8; k < body.size(); ++k) {
    for (uint8_t v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string b = body;
      b[k] = static_cast<char>(v);
      bad.push_back(reseal(b));
    }
  }
  bad.push_back(reseal(body + "x"));
  size_t rejected = 0;
  for (const std::string& bytes : bad) {
    Status want = ShardIndex::Parse(bytes, "/x.idx").status();
    for (uint64_t budget : {kDefaultIndexDirectoryBytes, kOneSpanBudget}) {
      Status got = Open(bytes, 0, budget).status();
      ASSERT_EQ(got.code(), want.code()) << want.ToString() << " vs " << got.ToString();
      ASSERT_EQ(got.message(), want.message());
    }
    if (!want.ok()) {
      ++rejected;
      EXPECT_EQ(want.message().rfind("/x.idx: corrupt index: ", 0), 0u) << want.message();
    }
  }
  EXPECT_GT(rejected, good.size() * 2);
}

TEST_F(IndexDirectoryTest, MissingIndexIsNotFound) {
  EXPECT_EQ(OpenIndexDirectory(fs_.get(), "/none.idx", nullptr).status().code(),
            StatusCode::kNotFound);
}

TEST_F(IndexDirectoryTest, CacheStaysWithinItsCapacity) {
  ShardIndex eager = RandomIndex(4 * K, 20 * K, 9);
  const uint64_t capacity = 16 * 1500;  // one or two blocks of ~1 KB per cache shard
  auto cache = NewIndexBlockCache(capacity);
  ASSERT_TRUE(fs_->WriteAll("/x.idx", eager.Serialize()).ok());
  auto lazy = OpenIndexDirectory(fs_.get(), "/x.idx", cache);
  ASSERT_TRUE(lazy.ok());
  std::mt19937 rng(1);
  IndexRecord r;
  IndexFrame f;
  for (int k = 0; k < 5000; ++k) {
    uint64_t i = rng() % eager.num_records();
    ASSERT_TRUE((*lazy)->Locate(i, &r, &f).ok());
    ASSERT_EQ(r.offset_in_frame, eager.records()[i].offset_in_frame);
    ASSERT_LE(cache->stats().bytes, capacity);
  }
  EXPECT_GE(cache->stats().blocks, 2u);
  EXPECT_GT(cache->stats().hits, 0u);
}

// Reading a shard in order reads each block once: block mode and sequential reads never
// wait for the file twice.
TEST_F(IndexDirectoryTest, SequentialLookupsReadEachBlockOnce) {
  const uint64_t record_blocks = 40, frame_blocks = 14;
  ShardIndex eager = RandomIndex(frame_blocks * K - 7, record_blocks * K, 11);
  ASSERT_TRUE(fs_->WriteAll("/x.idx", eager.Serialize()).ok());
  for (uint64_t budget : kBudgets) {
    auto cache = NewIndexBlockCache(1);  // caches nothing
    auto lazy = OpenIndexDirectory(fs_.get(), "/x.idx", cache, budget);
    ASSERT_TRUE(lazy.ok());
    ExpectSameEntries(**lazy, eager);
    EXPECT_LE(cache->stats().misses, record_blocks + frame_blocks) << budget;
  }
}

// An index that fits the cache is read from the file once, whatever the access order.
TEST_F(IndexDirectoryTest, RandomLookupsReadEachBlockOnceWhenTheIndexFits) {
  ShardIndex eager = RandomIndex(10 * K, 30 * K, 12);
  auto cache = NewIndexBlockCache();
  ASSERT_TRUE(fs_->WriteAll("/x.idx", eager.Serialize()).ok());
  auto lazy = OpenIndexDirectory(fs_.get(), "/x.idx", cache);
  ASSERT_TRUE(lazy.ok());
  std::mt19937 rng(2);
  IndexRecord r;
  IndexFrame f;
  for (int k = 0; k < 20000; ++k) ASSERT_TRUE((*lazy)->Locate(rng() % (30 * K), &r, &f).ok());
  // Each block is read once, but for the few that share a set of the 2-way cache with two
  // others (~40^3 / (6 * 2000^2) of the time): at most ~500 extra misses.
  EXPECT_LE(cache->stats().blocks, 40u);
  EXPECT_LE(cache->stats().misses, 1000u);
}

TEST_F(IndexDirectoryTest, ConcurrentLookupsThroughASharedCache) {
  // Four shards, one small shared cache: threads evict each other's blocks all the time.
  const uint64_t capacity = 16 * 800;  // about one block per cache shard
  auto cache = NewIndexBlockCache(capacity);
  std::vector<std::vector<std::string>> records;
  std::vector<std::unique_ptr<ShardReader>> readers;
  ShardReaderOptions options;
  options.index_cache = cache;
  for (int s = 0; s < 4; ++s) {
    records.push_back(MakeRecords(3 * K + s, 0, 50, s + 1));
    RecordWriterOptions o;
    o.codec = s % 2 ? Codec::kZstd : Codec::kNone;
    o.zstd_frame_bytes = 500;
    std::string path = "/c" + std::to_string(s);
    ASSERT_TRUE(WriteShard(fs_.get(), path, records.back(), o).ok());
    options.index_directory_bytes = s < 2 ? kDefaultIndexDirectoryBytes : kOneSpanBudget;
    auto reader = ShardReader::Open(fs_.get(), path, options);
    ASSERT_TRUE(reader.ok());
    readers.push_back(std::move(*reader));
  }
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::string out;
      for (int k = 0; k < 4000; ++k) {
        size_t s = rng() % readers.size();
        uint64_t i = rng() % records[s].size();
        if (!readers[s]->Read(i, &out).ok() || out != records[s][i]) ++failures[t];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
  EXPECT_LE(cache->stats().bytes, capacity);
}

// The index file is rewritten in place after the reader opened it (pread on the same file
// sees the new bytes): lookups of blocks not cached give a DataLoss naming the index file.
// An uncompressed shard of `n` records of 1..30 bytes in a temp dir: every record is alone
// in its frame and every frame entry takes three one-byte varints, so frame j's entry starts
// at byte 32 + 3j of the index, `idx`.
struct UncompressedShard {
  explicit UncompressedShard(uint64_t n) : records(MakeRecords(n, 1, 30)) {
    RecordWriterOptions o;
    o.codec = Codec::kNone;
    ok = WriteShard(fs, path, records, o).ok();
    if (ok) idx = *fs->ReadAll(path + ".idx");
  }
  void RewriteIndex(const std::string& bytes) const {
    std::ofstream(path + ".idx", std::ios::binary | std::ios::trunc) << bytes;
  }
  TempDir tmp;
  io::FileSystem* fs = io::LocalFileSystem();
  std::string path = tmp.path() + "/s.tfrecord";
  std::vector<std::string> records;
  std::string idx;
  bool ok = false;
};

TEST(IndexDirectoryChanged, IndexRewrittenAfterOpenIsDataLoss) {
  UncompressedShard shard(3 * K);
  ASSERT_TRUE(shard.ok);
  io::FileSystem* fs = shard.fs;
  const std::string& path = shard.path;
  const auto& records = shard.records;
  const std::string& idx = shard.idx;
  auto reader = ShardReader::Open(fs, path);
  ASSERT_TRUE(reader.ok());
  std::string out;
  ASSERT_TRUE((*reader)->Read(0, &out).ok());  // block 0 is cached now
  auto rewrite = [&](const std::string& bytes) { shard.RewriteIndex(bytes); };
  std::string changed = idx;
  changed[32 + 3 * (K + 10) + 1] ^= 0x01;  // frame K + 10's entry (block 1)
  rewrite(changed);
  EXPECT_TRUE((*reader)->Read(1, &out).ok());  // from the cache
  EXPECT_EQ(out, records[1]);
  uint64_t miss = 0;
  for (uint64_t i = K; i < records.size(); ++i) {
    Status s = (*reader)->Read(i, &out);
    if (s.ok()) {
      EXPECT_EQ(out, records[i]);
      continue;
    }
    ++miss;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find(path + ".idx: index changed since it was opened"), std::string::npos)
        << s.message();
  }
  EXPECT_EQ(miss, K);          // exactly the block holding the flipped byte
  rewrite(idx.substr(0, 40));  // truncated: every block not cached is cut short
  auto fresh = ShardReader::Open(fs, path);
  EXPECT_EQ(fresh.status().code(), StatusCode::kDataLoss);
  Status s = (*reader)->Read(K + 5, &out);  // block 1 was never cached
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("cut short"), std::string::npos) << s.message();
}

// With one span for the whole table, a changed byte anywhere fails every lookup not cached,
// and the error names the span's entries.
TEST(IndexDirectoryChanged, IndexRewrittenAfterOpenIsDataLossForTheWholeSpan) {
  UncompressedShard shard(3 * K);  // one record per frame: lookups use the frame table alone
  ASSERT_TRUE(shard.ok);
  const std::string& path = shard.path;
  std::string idx = shard.idx;
  ShardReaderOptions options;
  options.index_directory_bytes = kOneSpanBudget;
  auto reader = ShardReader::Open(shard.fs, path, options);
  ASSERT_TRUE(reader.ok());
  idx[32 + 3 * (2 * K + 10) + 1] ^= 0x01;  // frame 2K + 10's entry, in block 2
  shard.RewriteIndex(idx);
  std::string out;
  // Blocks 0 and 2 are cached: Open checked the first and the last record against the shard.
  Status s = (*reader)->Read(K + 5, &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(path + ".idx: index changed since it was opened: entries 0.." +
                             std::to_string(3 * K - 1) + " of its frame table"),
            std::string::npos)
      << s.message();
}

// A walk over spans read at once finds a changed span as a walk span by span does: the
// entries before it are delivered, the error names the span's entries; a file cut short
// fails at the first span it no longer holds.
TEST(IndexDirectoryChanged, RangeWalkOverAChangedIndexNamesTheChangedSpan) {
  UncompressedShard shard(8 * K);  // one record per frame: a range walks the frame table
  ASSERT_TRUE(shard.ok);
  io::FileSystem* fs = shard.fs;
  const std::string& path = shard.path;
  const std::string& idx = shard.idx;
  auto lazy = OpenIndexDirectory(fs, path + ".idx", NewIndexBlockCache(1));  // a span per block
  ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
  std::string changed = idx;
  changed[32 + 3 * (5 * K + 10) + 1] ^= 0x01;  // frame 5K + 10's entry, in block 5
  shard.RewriteIndex(changed);
  uint64_t delivered = 0;
  Status s = (*lazy)->LocateRange(K, 6 * K, [&](uint64_t, const IndexRecord&, const IndexFrame&) {
    ++delivered;
  });
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("index changed since it was opened: entries " +
                             std::to_string(5 * K) + ".." + std::to_string(6 * K - 1) +
                             " of its frame table"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(delivered, 4 * K);  // blocks 1..4
  std::vector<IndexLookup::RangeEntry> bulk;  // the bulk walk: the same entries, the same error
  Status bulk_status = (*lazy)->LocateRangeInto(K, 6 * K, &bulk);
  EXPECT_EQ(bulk_status, s);
  ASSERT_EQ(bulk.size(), 4 * K);
  auto eager = ShardIndex::Parse(idx, path + ".idx");
  ASSERT_TRUE(eager.ok());
  EXPECT_EQ(bulk.back().frame_file_offset, eager->frames()[5 * K - 1].file_offset);
  shard.RewriteIndex(idx.substr(0, 32 + 3 * 3 * K));
  delivered = 0;
  s = (*lazy)->LocateRange(0, 8 * K, [&](uint64_t, const IndexRecord&, const IndexFrame&) {
    ++delivered;
  });
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("entries " + std::to_string(3 * K) + ".." +
                             std::to_string(4 * K - 1) + " of its frame table"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("cut short"), std::string::npos) << s.message();
  EXPECT_EQ(delivered, 3 * K);
}

}  // namespace
}  // namespace sluice::format

namespace sluice::format {
namespace {

// One set of two 512-byte ways: small blocks share it, a wide block takes it whole.
TEST(IndexBlockCache, WideAndNarrowBlocksShareASet) {
  IndexBlockCache cache(2 * IndexBlockCache::kSlotBytes + 64);
  const std::string a(100, 'a'), b(512, 'b'), c(700, 'c'), d(1, 'd');
  std::string got;
  cache.Insert({1, 0}, a);
  cache.Insert({1, 1}, b);
  ASSERT_TRUE(cache.Find({1, 0}, &got));
  EXPECT_EQ(got, a);
  ASSERT_TRUE(cache.Find({1, 1}, &got));
  EXPECT_EQ(got, b);
  cache.Insert({2, 0}, d);  // evicts the less recently used: a
  EXPECT_FALSE(cache.Find({1, 0}, &got));
  ASSERT_TRUE(cache.Find({2, 0}, &got));
  EXPECT_EQ(got, d);
  cache.Insert({3, 0}, c);  // wide: takes the whole set
  EXPECT_FALSE(cache.Find({1, 1}, &got));
  EXPECT_FALSE(cache.Find({2, 0}, &got));
  ASSERT_TRUE(cache.Find({3, 0}, &got));
  EXPECT_EQ(got, c);
  cache.Insert({4, 0}, a);  // narrow again: the wide block goes
  EXPECT_FALSE(cache.Find({3, 0}, &got));
  ASSERT_TRUE(cache.Find({4, 0}, &got));
  EXPECT_EQ(got, a);
  cache.Insert({5, 0}, std::string(2 * IndexBlockCache::kSlotBytes + 1, 'x'));  // too large
  EXPECT_FALSE(cache.Find({5, 0}, &got));
  EXPECT_EQ(cache.stats().blocks, 1u);
}

}  // namespace
}  // namespace sluice::format

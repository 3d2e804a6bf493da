// Reading an uncompressed local shard through its memory map (RecordReaderOptions::
// map_uncompressed, opt-in) must be indistinguishable from buffered reading: the same
// records, errors, skipped ranges and warnings, whatever the damage. The corruption tests run
// on the in-memory file system, i.e. the buffered path; this holds the mapped path to them.
// And the default path must survive a shard truncated while it is read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "sluice/format/record_writer.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::MakeRecords;
using testing::ReadResult;
using testing::ReadShard;
using testing::TempDir;
using testing::WriteShard;

void ExpectSameRead(const ReadResult& mapped, const ReadResult& buffered, const std::string& what) {
  EXPECT_EQ(mapped.status.code(), buffered.status.code()) << what;
  EXPECT_EQ(mapped.status.message(), buffered.status.message()) << what;
  EXPECT_EQ(mapped.records, buffered.records) << what;
  EXPECT_EQ(mapped.warnings, buffered.warnings) << what;
  ASSERT_EQ(mapped.skipped.size(), buffered.skipped.size()) << what;
  for (size_t i = 0; i < mapped.skipped.size(); ++i) {
    EXPECT_EQ(mapped.skipped[i].offset, buffered.skipped[i].offset) << what;
    EXPECT_EQ(mapped.skipped[i].length, buffered.skipped[i].length) << what;
    EXPECT_EQ(mapped.skipped[i].reason, buffered.skipped[i].reason) << what;
  }
}

// Reads `bytes`, stored as a local file, mapped and buffered (with a read buffer small enough
// that records straddle reads), in strict, torn-tail and skip mode, and compares.
void ExpectMappedReadsAsBuffered(const std::string& bytes, const std::string& what) {
  TempDir dir;
  io::FileSystem* fs = io::LocalFileSystem();
  const std::string path = io::JoinPath(dir.path(), "s.tfrecord");
  ASSERT_TRUE(fs->WriteAll(path, bytes).ok());
  for (int mode = 0; mode < 3; ++mode) {
    RecordReaderOptions options;
    options.map_uncompressed = true;
    options.tolerate_torn_tail = mode == 1;
    if (mode == 2) options.policy = CorruptionPolicy::kSkip;
    RecordReaderOptions buffered = options;
    buffered.map_uncompressed = false;
    buffered.read_buffer_bytes = 4096;
    ExpectSameRead(ReadShard(fs, path, options), ReadShard(fs, path, buffered),
                   what + ", mode " + std::to_string(mode));
  }
}

std::string GoodShard(const std::vector<std::string>& records) {
  std::string bytes;
  for (const auto& r : records) AppendFramedRecord(r, &bytes);
  return bytes;
}

TEST(RecordMappedRead, FlippedBytesReadAsBuffered) {
  // Records around 4 KiB straddle the buffered reader's reads.
  const std::string good = GoodShard(MakeRecords(12, 0, 6000));
  for (size_t k = 0; k < good.size(); k += 157) {
    std::string bad = good;
    bad[k] ^= 0x5A;
    ExpectMappedReadsAsBuffered(bad, "flipped byte " + std::to_string(k));
  }
}

TEST(RecordMappedRead, TruncatedTailsReadAsBuffered) {
  const std::string good = GoodShard(MakeRecords(12, 0, 6000));
  for (size_t cut = 1; cut < good.size(); cut += 131) {
    ExpectMappedReadsAsBuffered(good.substr(0, cut), "cut at " + std::to_string(cut));
  }
}

TEST(RecordMappedRead, ZeroFilledHoleReadsAsBuffered) {
  std::string bad = GoodShard(MakeRecords(40, 0, 300));
  std::fill(bad.begin() + 1000, bad.begin() + 3000, '\0');
  ExpectMappedReadsAsBuffered(bad, "zero-filled hole");
}

TEST(RecordMappedRead, IntactShardReadsAsWritten) {
  TempDir dir;
  io::FileSystem* fs = io::LocalFileSystem();
  const std::string path = io::JoinPath(dir.path(), "s.tfrecord");
  auto records = MakeRecords(3000, 0, 2000);
  RecordWriterOptions o;
  o.codec = Codec::kNone;
  ASSERT_TRUE(WriteShard(fs, path, records, o).ok());
  RecordReaderOptions mapped;
  mapped.map_uncompressed = true;
  for (const auto& options : {RecordReaderOptions(), mapped}) {
    auto got = ReadShard(fs, path, options);
    ASSERT_TRUE(got.status.ok()) << got.status.ToString();
    EXPECT_EQ(got.records, records);
  }
}

// Issue 13, item 9: a shard truncated by another process while it is read. The default
// reader reports DataLoss; it used to map the file and die with SIGBUS (the child below
// exits 0 only when the read ended with that error).
void ReadWhileTruncating(const std::string& path, uint64_t keep) {
  auto reader = RecordReader::Open(io::LocalFileSystem(), path);
  if (!reader.ok()) std::exit(2);
  ByteView r;
  if (!(*reader)->Next(&r).ok()) std::exit(3);
  if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) std::exit(4);
  for (;;) {
    auto more = (*reader)->Next(&r);
    if (!more.ok()) {
      const Status error = more.status();
      const std::string& m = error.message();
      bool named = m.find("file shrank while reading") != std::string::npos ||
                   m.find("truncated record") != std::string::npos;
      std::exit(error.code() == StatusCode::kDataLoss && named ? 0 : 5);
    }
    if (!*more) std::exit(6);  // the end, silently: the cut records went unnoticed
  }
}

TEST(RecordMappedReadDeathTest, ShardTruncatedWhileReadIsAnErrorNotACrash) {
  TempDir dir;
  const std::string path = io::JoinPath(dir.path(), "s.tfrecord");
  auto records = MakeRecords(4000, 900, 1100);  // ~4 MiB: several reads of the 1 MiB buffer
  RecordWriterOptions o;
  o.codec = Codec::kNone;
  ASSERT_TRUE(WriteShard(io::LocalFileSystem(), path, records, o).ok());
  EXPECT_EXIT(ReadWhileTruncating(path, uint64_t{3} << 20), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sluice::format

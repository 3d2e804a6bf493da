// A stale index that passes the checks at open (the same file size, the same first and last
// record): under ShardDamagePolicy::kRecover the first read that finds no record where the
// index places one re-indexes the shard, and every position is then served from the record
// the data holds for it (format/index_realign.h), by Read and by the chunk path alike. A
// position with no record is a DataLoss naming it; a damaged payload under an intact header
// stays that record's error alone.
#include <gtest/gtest.h>

#include <random>

#include "sluice/format/shard_chunks.h"
#include "sluice/format/shard_index.h"
#include "unit/record_test_util.h"

namespace sluice::format {
namespace {

using testing::WriteShard;

// Incompressible filler (so that zstd stores it raw).
std::string RandomBytes(size_t n) {
  static std::mt19937 rng(11);
  std::string r(n, '\0');
  for (char& c : r) c = static_cast<char>(rng());
  return r;
}

// Incompressible records (zstd stores them raw, so any order compresses to the same size),
// each starting with its number.
std::vector<std::string> Payloads(size_t n, std::vector<size_t> sizes) {
  std::mt19937 rng(7);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string r = std::to_string(1000 + i);
    for (size_t k = 0; k < sizes[i % sizes.size()]; ++k) r.push_back(static_cast<char>(rng()));
    out.push_back(std::move(r));
  }
  return out;
}

// Record i through the chunk path as the read stage takes it: straight from the decoded
// chunk (IntactRecordInChunk) where that succeeds, else through the reader. Both are asked,
// the chunk first (a reader's read may re-index the shard): where the chunk gives a record,
// the reader must give the same bytes.
Result<ByteView> ChunkRead(const ShardReader& reader, uint64_t i, const ShardChunk& chunk,
                           const DecodedChunk& decoded, std::string* scratch) {
  ByteView direct;
  const bool straight = IntactRecordInChunk(decoded, i - chunk.first_record, &direct);
  Result<ByteView> r = reader.RecordInChunk(i, chunk, decoded, scratch);
  if (straight) {
    EXPECT_TRUE(r.ok()) << "record " << i << ": " << r.status().ToString();
    if (r.ok()) {
      EXPECT_EQ(std::string(direct), std::string(*r)) << "record " << i;
    }
  }
  return r;
}

// `chunk` of the reader's shard, fetched from its file and decoded into *out: the fetch's
// error or the decode's.
Status FetchAndDecode(const ShardReader& reader, const ShardChunk& chunk, DecodedChunk* out) {
  std::string fetched(chunk.file_bytes, '\0');
  auto got = reader.file().Read(chunk.file_offset, chunk.file_bytes, fetched.data());
  if (!got.ok()) return got.status();
  fetched.assign(got->data(), got->size());
  return reader.DecodeChunk(chunk, std::move(fetched), out);
}

// Chunk `c` of the reader's shard, fetched and decoded.
DecodedChunk Decode(const ShardReader& reader, size_t c) {
  DecodedChunk decoded;
  Status s = FetchAndDecode(reader, reader.chunks().at(c), &decoded);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return decoded;
}

class ShardReindex : public ::testing::TestWithParam<Codec> {
 protected:
  // Writes `before` with its index, then `after` over it keeping the old index. The checks
  // at open compare sizes: a zstd shard's last record is grown or cut until the sizes agree
  // (its random bytes are stored nearly raw).
  void WriteStale(const std::vector<std::string>& before, std::vector<std::string>* after) {
    RecordWriterOptions o;
    o.codec = GetParam();
    o.zstd_frame_bytes = 2000;
    ASSERT_TRUE(WriteShard(fs_.get(), path_, before, o).ok());
    const std::string stale = *fs_->ReadAll(path_ + ".idx");
    const int64_t size = static_cast<int64_t>(fs_->ReadAll(path_)->size());
    for (int attempt = 0; attempt < 20; ++attempt) {
      ASSERT_TRUE(WriteShard(fs_.get(), path_, *after, o).ok());
      const int64_t delta = size - static_cast<int64_t>(fs_->ReadAll(path_)->size());
      if (delta == 0) break;
      std::string& last = after->back();
      if (delta > 0) last += RandomBytes(static_cast<size_t>(delta));
      if (delta < 0) last.resize(last.size() - std::min<size_t>(last.size() - 8, -delta));
    }
    ASSERT_EQ(static_cast<int64_t>(fs_->ReadAll(path_)->size()), size);
    ASSERT_TRUE(fs_->WriteAll(path_ + ".idx", stale).ok());
  }
  std::unique_ptr<ShardReader> Open(ShardDamagePolicy policy) {
    ShardReaderOptions o;
    o.on_damage = policy;
    o.chunk_bytes = 3000;
    auto reader = ShardReader::Open(fs_.get(), path_, o);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    return reader.ok() ? std::move(*reader) : nullptr;
  }
  // Every position through Read: the payload, or the error's message prefixed by "!".
  static std::vector<std::string> ReadAll(const ShardReader& reader) {
    std::vector<std::string> out;
    std::string r;
    for (uint64_t i = 0; i < reader.num_records(); ++i) {
      Status s = reader.Read(i, &r);
      out.push_back(s.ok() ? r : "!" + s.message());
    }
    return out;
  }
  // The same through the chunk path: each chunk fetched, decoded, its records looked up.
  static std::vector<std::string> ReadAllByChunk(const ShardReader& reader) {
    std::vector<std::string> out;
    std::string scratch;
    for (const ShardChunk& chunk : reader.chunks()) {
      DecodedChunk decoded;
      Status s = FetchAndDecode(reader, chunk, &decoded);
      EXPECT_TRUE(s.ok()) << s.ToString();
      for (uint64_t i = chunk.first_record; i < chunk.first_record + chunk.records; ++i) {
        Result<ByteView> r = ChunkRead(reader, i, chunk, decoded, &scratch);
        out.push_back(r.ok() ? std::string(*r) : "!" + r.status().message());
      }
    }
    return out;
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  std::string path_ = "/d/s.tfrecord";
};

TEST_P(ShardReindex, SwappedRecordsUnderAStaleIndexAreAllServed) {
  const auto before = Payloads(40, {100, 300, 170});
  auto after = before;
  std::swap(after[2], after[3]);
  WriteStale(before, &after);
  auto strict = Open(ShardDamagePolicy::kFail);  // the checks at open pass
  std::string r;
  Status s = strict->Read(2, &r);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  for (bool by_chunk : {false, true}) {
    auto reader = Open(ShardDamagePolicy::kRecover);
    EXPECT_FALSE(reader->damage().has_value());
    EXPECT_EQ(by_chunk ? ReadAllByChunk(*reader) : ReadAll(*reader), after) << by_chunk;
  }
}

TEST_P(ShardReindex, PositionWithoutARecordIsLostAndNamed) {
  const auto before = Payloads(20, {200});
  auto after = before;
  after[5] += RandomBytes(after[6].size() + 16);  // 5 and 6 merged: same framed size
  after.erase(after.begin() + 6);
  WriteStale(before, &after);
  std::vector<std::string> expected = after;
  for (bool by_chunk : {false, true}) {
    auto reader = Open(ShardDamagePolicy::kRecover);
    std::vector<std::string> got = by_chunk ? ReadAllByChunk(*reader) : ReadAll(*reader);
    ASSERT_EQ(got.size(), 20u);
    const std::string lost = got[6];
    got.erase(got.begin() + 6);
    EXPECT_EQ(got, expected) << by_chunk;
    EXPECT_NE(lost.find("record 6 is lost"), std::string::npos) << lost;
    EXPECT_NE(lost.find("19 intact record(s)"), std::string::npos) << lost;
    EXPECT_NE(lost.find("the index listed 20"), std::string::npos) << lost;
  }
}

// Cases where the codec changes nothing (the alignment) or cannot be made (a payload flip
// under an intact header inside a zstd frame): uncompressed shards only.
class ShardReindexUncompressed : public ShardReindex {};

TEST_P(ShardReindexUncompressed, RecordSplitInTwoServesTheFirstAndSaysTheOtherIsNotServed) {
  const auto before = Payloads(10, {300});
  auto after = before;
  after[4] = before[4].substr(0, 100);  // 4 becomes two records of the same framed size
  after.insert(after.begin() + 5, RandomBytes(300 + 4 - 100 - 16));
  after[8] = before[7] + RandomBytes(before[8].size() + 16);  // 7 and 8 merge: a lost position
  after.erase(after.begin() + 9);
  WriteStale(before, &after);
  auto reader = Open(ShardDamagePolicy::kRecover);
  std::vector<std::string> got = ReadAll(*reader);
  // Positions 0-3 and 9 keep their records; 4 pairs with the first half, 5-7 with the
  // records after the split; 8 has none left.
  std::vector<std::string> expected(after.begin(), after.begin() + 5);
  expected.insert(expected.end(), after.begin() + 6, after.begin() + 9);
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + 8),
            std::vector<std::string>(expected.begin(), expected.begin() + 8));
  EXPECT_NE(got[8].find("record 8 is lost"), std::string::npos) << got[8];
  EXPECT_NE(got[8].find("not served"), std::string::npos) << got[8];
  EXPECT_EQ(got[9], after[9]);
}

TEST_P(ShardReindexUncompressed, DamagedPayloadUnderAnIntactHeaderIsThatRecordsErrorAlone) {
  const auto records = Payloads(20, {150});
  RecordWriterOptions o;
  o.codec = Codec::kNone;
  ASSERT_TRUE(WriteShard(fs_.get(), path_, records, o).ok());
  std::string bytes = *fs_->ReadAll(path_);
  bytes[5 * (150 + 4 + 16) + 12 + 20] ^= 1;  // inside record 5's payload
  ASSERT_TRUE(fs_->WriteAll(path_, bytes).ok());
  auto reader = Open(ShardDamagePolicy::kRecover);
  std::vector<std::string> got = ReadAll(*reader);
  EXPECT_NE(got[5].find("payload CRC mismatch"), std::string::npos) << got[5];
  got.erase(got.begin() + 5);
  std::vector<std::string> expected = records;
  expected.erase(expected.begin() + 5);
  EXPECT_EQ(got, expected);
}

// DecodeChunk only locates a chunk's records; each read checks its own (so that the first
// batch after a start waits for the checks of its records only, not of whole chunks): bytes
// damaged in the decoded chunk after its decode are never returned. A damaged payload is
// that record's error; a damaged header too, unless kRecover, which re-indexes the shard
// and serves the record from the (intact) file.
TEST_P(ShardReindex, ARecordOfADecodedChunkIsCheckedWhenItIsRead) {
  const auto records = Payloads(12, {40, 90});
  RecordWriterOptions o;
  o.codec = GetParam();
  ASSERT_TRUE(WriteShard(fs_.get(), path_, records, o).ok());
  for (ShardDamagePolicy policy : {ShardDamagePolicy::kFail, ShardDamagePolicy::kRecover}) {
    auto reader = Open(policy);
    ASSERT_NE(reader, nullptr);
    const ShardChunk& chunk = reader->chunks().front();
    ASSERT_GE(chunk.records, 6u);
    DecodedChunk decoded;
    ASSERT_TRUE(FetchAndDecode(*reader, chunk, &decoded).ok());
    ASSERT_EQ(decoded.records.size(), chunk.records);
    decoded.bytes[decoded.records[3].offset + kRecordHeaderBytes + 5] ^= 1;  // payload
    decoded.bytes[decoded.records[4].offset + 2] ^= 1;                      // length
    ByteView direct;
    EXPECT_FALSE(IntactRecordInChunk(decoded, 3, &direct));
    EXPECT_FALSE(IntactRecordInChunk(decoded, 4, &direct));
    EXPECT_FALSE(IntactRecordInChunk(decoded, chunk.records, &direct));  // past the chunk
    std::string scratch;
    for (uint64_t i = 0; i < chunk.records; ++i) {
      Result<ByteView> r = ChunkRead(*reader, chunk.first_record + i, chunk, decoded, &scratch);
      if (i == 3) {
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find("payload CRC mismatch"), std::string::npos)
            << r.status().ToString();
      } else if (i == 4 && policy == ShardDamagePolicy::kFail) {
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find("length CRC mismatch"), std::string::npos)
            << r.status().ToString();
      } else {
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(std::string(*r), records[chunk.first_record + i]);
      }
    }
  }
}

// The read stage takes a record straight from its decoded chunk (IntactRecordInChunk) where
// the decode located it, it checks intact there and the chunk's reader is not re-indexed
// (a re-indexed reader serves some positions from elsewhere): a chunk decoded before its
// reader was re-indexed is read through the reader from then on, and so is every chunk of a
// re-indexed reader; other readers' chunks are not affected. Without CRC checks both paths
// hand out a damaged payload alike.
TEST_P(ShardReindex, ADecodedChunkIsReadStraightWhileItsReaderIsNotReindexed) {
  const auto records = Payloads(12, {40, 90});
  RecordWriterOptions o;
  o.codec = GetParam();
  const std::string intact_path = "/d/intact.tfrecord";
  ASSERT_TRUE(WriteShard(fs_.get(), intact_path, records, o).ok());
  ShardReaderOptions ro;
  ro.chunk_bytes = 3000;
  auto intact = ShardReader::Open(fs_.get(), intact_path, ro);
  ASSERT_TRUE(intact.ok()) << intact.status().ToString();
  const ShardChunk& chunk = (*intact)->chunks().front();
  DecodedChunk kept = Decode(**intact, 0);
  ByteView r;
  for (uint64_t j = 0; j < chunk.records; ++j) {
    ASSERT_TRUE(IntactRecordInChunk(kept, j, &r)) << j;
    EXPECT_EQ(std::string(r), records[chunk.first_record + j]);
  }
  DecodedChunk unset = kept;
  unset.reindexed = nullptr;  // not marked by a shard reader's decode: read through the reader
  EXPECT_FALSE(IntactRecordInChunk(unset, 0, &r));

  // A stale index, re-indexed on the first read of a misplaced record (2 and 3 swapped).
  const auto before = Payloads(40, {100, 300, 170});
  auto after = before;
  std::swap(after[2], after[3]);
  WriteStale(before, &after);
  auto stale = Open(ShardDamagePolicy::kRecover);
  ASSERT_NE(stale, nullptr);
  DecodedChunk early = Decode(*stale, 0);  // before the re-indexing
  ASSERT_GE(early.records.size(), 4u);
  // (zstd: the stale frames may fail the decode itself, which then re-indexes the shard.)
  const bool straight = IntactRecordInChunk(early, 0, &r);
  if (GetParam() == Codec::kNone) {
    EXPECT_TRUE(straight);
  }
  if (straight) {
    EXPECT_EQ(std::string(r), after[0]);
  }
  EXPECT_FALSE(IntactRecordInChunk(early, 2, &r));  // not where the stale index says
  EXPECT_EQ(ReadAllByChunk(*stale), after);         // re-indexes the shard
  for (uint64_t j = 0; j < early.records.size(); ++j) {
    EXPECT_FALSE(IntactRecordInChunk(early, j, &r)) << j;
  }
  std::string scratch;
  Result<ByteView> through = stale->RecordInChunk(0, stale->chunks().front(), early, &scratch);
  ASSERT_TRUE(through.ok()) << through.status().ToString();
  EXPECT_EQ(std::string(*through), after[0]);
  for (size_t c = 0; c < stale->chunks().size(); ++c) {
    DecodedChunk d = Decode(*stale, c);
    for (uint64_t j = 0; j < d.records.size(); ++j) EXPECT_FALSE(IntactRecordInChunk(d, j, &r));
  }
  ASSERT_TRUE(IntactRecordInChunk(kept, 1, &r));  // the other reader's chunk: still straight
  EXPECT_EQ(std::string(r), records[chunk.first_record + 1]);

  // Without CRC checks: the damaged payload from both paths.
  ro.verify_crc = false;
  auto unchecked = ShardReader::Open(fs_.get(), intact_path, ro);
  ASSERT_TRUE(unchecked.ok());
  DecodedChunk d = Decode(**unchecked, 0);
  d.bytes[d.records[2].offset + kRecordHeaderBytes + 1] ^= 1;
  ASSERT_TRUE(IntactRecordInChunk(d, 2, &r));
  std::string damaged = records[chunk.first_record + 2];
  damaged[1] ^= 1;
  EXPECT_EQ(std::string(r), damaged);
  through = ChunkRead(**unchecked, chunk.first_record + 2, chunk, d, &scratch);
  ASSERT_TRUE(through.ok());
  EXPECT_EQ(std::string(*through), damaged);
}

// A zstd frame's content checksum (XXH64, its last 4 bytes) is skipped by a reader that
// checks every record's CRCs (verify_crc, the default: the records' CRCs catch what it
// would, and it costs ~14% of a decode); a reader that does not check CRCs checks it. A
// damaged checksum alone loses no record; damaged compressed bytes never give a record.
TEST(ShardChunkChecksum, AZstdFrameChecksumIsCheckedOnlyWhenRecordCrcsAreNot) {
  std::unique_ptr<io::FileSystem> fs = io::NewMemoryFileSystem();
  const std::string path = "/d/s.tfrecord.zst";
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i) records.push_back("record " + std::to_string(i) + " of many");
  RecordWriterOptions wo;
  wo.codec = Codec::kZstd;
  ASSERT_TRUE(WriteShard(fs.get(), path, records, wo).ok());
  const std::string intact = *fs->ReadAll(path);
  // Every record through the chunk path, or the error of the decode or of the record.
  auto read_all = [&](bool verify_crc) {
    ShardReaderOptions o;
    o.verify_crc = verify_crc;
    auto reader = ShardReader::Open(fs.get(), path, o);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<std::string> out;
    if (!reader.ok()) return out;
    EXPECT_EQ((*reader)->chunks().size(), 1u);
    const ShardChunk& chunk = (*reader)->chunks().front();
    DecodedChunk decoded;
    Status s = FetchAndDecode(**reader, chunk, &decoded);
    if (!s.ok()) return std::vector<std::string>{"!" + s.message()};
    std::string scratch;
    for (uint64_t i = 0; i < chunk.records; ++i) {
      Result<ByteView> r = ChunkRead(**reader, i, chunk, decoded, &scratch);
      out.push_back(r.ok() ? std::string(*r) : "!" + r.status().message());
    }
    return out;
  };
  EXPECT_EQ(read_all(true), records);
  EXPECT_EQ(read_all(false), records);
  ShardReaderOptions o;
  const ShardChunk chunk = (*ShardReader::Open(fs.get(), path, o))->chunks().front();
  std::string damaged = intact;
  damaged[chunk.file_offset + chunk.file_bytes - 2] ^= 0x10;  // the frame's checksum
  ASSERT_TRUE(fs->WriteAll(path, damaged).ok());
  EXPECT_EQ(read_all(true), records);
  const std::vector<std::string> unchecked = read_all(false);
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_NE(unchecked[0].find("corrupt zstd frame"), std::string::npos) << unchecked[0];
  EXPECT_NE(unchecked[0].find(path), std::string::npos) << unchecked[0];
  // A literal byte of the compressed data (the records' text is stored mostly as literals
  // near the frame's start): with CRCs checked, no record differs from what was written.
  for (uint64_t at = chunk.file_offset + 20; at < chunk.file_offset + chunk.file_bytes - 8;
       at += 7) {
    damaged = intact;
    damaged[at] ^= 0x04;
    ASSERT_TRUE(fs->WriteAll(path, damaged).ok());
    const std::vector<std::string> got = read_all(true);
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].empty() || got[i][0] != '!') {
        ASSERT_LT(i, records.size());
        EXPECT_EQ(got[i], records[i]) << "byte " << at << " flipped, record " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(None, ShardReindexUncompressed, ::testing::Values(Codec::kNone),
                         [](const auto& info) { return std::string(CodecName(info.param)); });
INSTANTIATE_TEST_SUITE_P(Codecs, ShardReindex, ::testing::Values(Codec::kNone, Codec::kZstd),
                         [](const auto& info) { return std::string(CodecName(info.param)); });

}  // namespace
}  // namespace sluice::format

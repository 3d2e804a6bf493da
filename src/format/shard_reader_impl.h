// ShardReaderImpl, the ShardReader of shard_reader.cc (reads through the index, the
// per-thread frame cache, the re-index of a stale index) and shard_reader_chunks.cc (the
// chunk path: DecodeChunk, RecordInChunk). Private to those two files.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "format/index_directory.h"
#include "format/index_realign.h"
#include "sluice/format/shard_chunks.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {

// A new id naming a reader (or its re-built index) in the per-thread caches.
uint64_t NewReaderId();

class ShardReaderImpl final : public ShardReader {
 public:
  ShardReaderImpl(io::FileSystem* fs, std::unique_ptr<io::RandomAccessFile> file,
                  std::unique_ptr<IndexLookup> index, const ShardReaderOptions& options,
                  std::optional<ShardDamage> damage)
      : fs_(fs),
        file_(std::move(file)),
        index_(std::move(index)),
        options_(options),
        damage_(std::move(damage)) {}

  const std::string& path() const override { return file_->path(); }
  Codec codec() const override { return index_->codec(); }
  uint64_t num_records() const override { return index_->num_records(); }
  uint64_t file_bytes() const override { return file_->size(); }
  const std::optional<ShardDamage>& damage() const override { return damage_; }
  Status Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const override;
  Status Read(uint64_t i, std::string* out) const override;
  const std::vector<ShardChunk>& chunks() const override { return index_->chunks(); }
  uint32_t index_checksum() const override { return index_->checksum(); }
  const io::RandomAccessFile& file() const override { return *file_; }
  Status DecodeChunk(const ShardChunk& chunk, std::string fetched,
                     DecodedChunk* out) const override;
  Result<ByteView> RecordInChunk(uint64_t i, const ShardChunk& chunk, const DecodedChunk& decoded,
                                 std::string* scratch) const override;
  // The framed bytes of the chunk's record j where DecodeChunk located it, when they pass
  // CheckRecord's checks there; nullptr otherwise (not located, or damaged: the caller
  // locates the record again to say what is wrong).
  const char* LocatedIntact(const DecodedChunk& decoded, uint64_t j) const;

 private:
  // Reads entry `entry` of `index` (this reader's own, or the realigned one; `cache_id`
  // names it in the per-thread frame cache) as record i. *misplaced is set when the failure
  // says the index frames no record there (a header that does not check or disagrees with
  // the index, a record outside its frame or the file, a frame that does not decode), as
  // opposed to a damaged payload under an intact header.
  Status ReadThrough(const IndexLookup& index, uint64_t cache_id, uint64_t i, uint64_t entry,
                     std::string* out, bool* misplaced) const;
  // Record i once the shard was re-indexed: the recovered record mapped to position i.
  Status ReadRealigned(const RealignedIndex& realigned, uint64_t i, std::string* out) const;
  Status LostError(const RealignedIndex& realigned, uint64_t i) const;
  // Whether a read that failed with `s` makes the reader re-index the shard.
  bool Realigns(const Status& s, bool misplaced) const {
    return misplaced && s.code() == StatusCode::kDataLoss &&
           options_.on_damage == ShardDamagePolicy::kRecover;
  }
  // Re-indexes the shard once (the first failure's threads wait for it); later calls return
  // the same index, or the failure with why re-indexing failed.
  Result<const RealignedIndex*> Realign(const Status& failure) const;
  const RealignedIndex* realigned() const {
    return realigned_active_->load(std::memory_order_acquire);
  }
  Status ReadUncompressed(uint64_t i, const IndexRecord& r, const IndexFrame& f, std::string* out,
                          bool* misplaced) const;
  // The framed record [at, at + framed) from this thread's read-ahead buffer, refilled from
  // `at` when the read goes forward; empty when it is not worth buffering.
  ByteView ReadAhead(uint64_t i, uint64_t at, uint64_t framed) const;
  Result<ByteView> DecodedFramePrefix(uint64_t cache_id, uint32_t frame, const IndexFrame& f,
                                      uint64_t need) const;
  Status Decode(const IndexFrame& frame, uint64_t need, std::string* out) const;
  Status DecodeInto(const IndexFrame& frame, uint64_t need, std::string* out,
                    size_t* produced) const;
  Status Inflate(const IndexFrame& frame, ByteView in, uint64_t need, std::string* out,
                 size_t* produced) const;
  Status CheckRecord(uint64_t i, const IndexRecord& r, const IndexFrame& f, const char* framed,
                     bool* misplaced = nullptr) const;
  std::string Where(uint64_t i, const IndexRecord& r, const IndexFrame& f) const;

  io::FileSystem* const fs_;  // re-indexes through it: outlives the reader
  std::unique_ptr<io::RandomAccessFile> file_;
  std::unique_ptr<IndexLookup> index_;
  ShardReaderOptions options_;
  std::optional<ShardDamage> damage_;
  uint64_t id_ = NewReaderId();  // names this reader in the thread caches
  // The index re-built while reading (Realign): set once, then never changed.
  mutable std::once_flag realign_once_;
  mutable std::unique_ptr<RealignedIndex> realigned_;  // written inside realign_once_ only
  mutable Status realign_error_;                       // likewise
  // Shared with the chunks this reader decodes (DecodedChunk::reindexed).
  const std::shared_ptr<std::atomic<const RealignedIndex*>> realigned_active_ =
      std::make_shared<std::atomic<const RealignedIndex*>>(nullptr);
  const uint64_t realigned_id_ = NewReaderId();  // its name in the thread caches
};

}  // namespace sluice::format

// ForwardingSource: a RecordSource that passes every call to another one. A wrapper that
// changes one thing (the snapshot identity of a table version, a test's decode counter)
// overrides that method alone, and a method added to RecordSource is forwarded here once.
// The read stage takes records straight from chunks a shard reader decoded, without
// ReadInChunk (RecordSource::ReadInChunk): a wrapper that changes what ReadInChunk returns
// must also clear DecodedChunk::reindexed in its DecodeChunk.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sluice/pipeline/source.h"

namespace sluice::pipeline {

class ForwardingSource : public RecordSource {
 public:
  explicit ForwardingSource(std::shared_ptr<RecordSource> inner) : inner_(std::move(inner)) {}
  const RecordSource& inner() const { return *inner_; }

  const std::vector<SourceDamage>& damage() const override { return inner_->damage(); }
  const std::vector<uint64_t>& shard_records() const override { return inner_->shard_records(); }
  const std::string& shard_name(uint32_t shard) const override {
    return inner_->shard_name(shard);
  }
  Result<ByteView> Read(uint32_t shard, uint64_t index, std::string* scratch) const override {
    return inner_->Read(shard, index, scratch);
  }
  SnapshotIdentity snapshot() const override { return inner_->snapshot(); }
  bool reads_by_chunk() const override { return inner_->reads_by_chunk(); }
  const std::vector<format::ShardChunk>& chunks(uint32_t shard) const override {
    return inner_->chunks(shard);
  }
  void FetchChunk(uint32_t shard, const format::ShardChunk& chunk, io::ReadCallback done,
                  const io::IoContext& context) const override {
    inner_->FetchChunk(shard, chunk, std::move(done), context);
  }
  bool fetches_now() const override { return inner_->fetches_now(); }
  Result<std::string> FetchChunkNow(uint32_t shard, const format::ShardChunk& chunk,
                                    std::string buffer) const override {
    return inner_->FetchChunkNow(shard, chunk, std::move(buffer));
  }
  uint64_t fetch_group_bytes() const override { return inner_->fetch_group_bytes(); }
  uint64_t read_ahead_bytes() const override { return inner_->read_ahead_bytes(); }
  void FetchChunks(uint32_t shard, const std::vector<format::ShardChunk>& chunks,
                   io::RangesCallback done, const io::IoContext& context) const override {
    inner_->FetchChunks(shard, chunks, std::move(done), context);
  }
  Status DecodeChunk(uint32_t shard, const format::ShardChunk& chunk, std::string fetched,
                     format::DecodedChunk* out) const override {
    return inner_->DecodeChunk(shard, chunk, std::move(fetched), out);
  }
  Result<ByteView> ReadInChunk(uint32_t shard, uint64_t index, const format::ShardChunk& chunk,
                               const format::DecodedChunk& decoded,
                               std::string* scratch) const override {
    return inner_->ReadInChunk(shard, index, chunk, decoded, scratch);
  }

 private:
  const std::shared_ptr<RecordSource> inner_;
};

}  // namespace sluice::pipeline

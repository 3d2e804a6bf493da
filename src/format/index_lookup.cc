// IndexLookup's default range walks, and the IndexLookup over a whole ShardIndex in memory
// (a shard without an index file).
#include <utility>
#include <vector>

#include "format/index_directory.h"
#include "sluice/base/bytes.h"
#include "sluice/base/crc32c.h"

namespace sluice::format {
namespace {

class InMemoryIndexLookup final : public IndexLookup {
 public:
  InMemoryIndexLookup(ShardIndex index, uint64_t chunk_bytes)
      : index_(std::move(index)), chunks_(ChunkTableOf(index_, chunk_bytes)) {
    const std::string serialized = index_.Serialize();
    checksum_ = crc32c::Unmask(DecodeFixed32(serialized.data() + serialized.size() - 4));
  }
  Status Frame(uint64_t j, IndexFrame* frame) const override {
    if (j >= index_.frames().size()) {
      return DataLoss("index frame " + std::to_string(j) + " out of range (" +
                      std::to_string(index_.frames().size()) + " frames)");
    }
    *frame = index_.frames()[j];
    return Status::OK();
  }
  const std::vector<ShardChunk>& chunks() const override { return chunks_; }
  uint32_t checksum() const override { return checksum_; }
  Codec codec() const override { return index_.codec(); }
  uint64_t num_records() const override { return index_.num_records(); }
  uint64_t end_offset() const override {
    const auto& frames = index_.frames();
    return frames.empty() ? 0 : frames.back().file_offset + frames.back().file_bytes;
  }
  uint64_t memory_bytes() const override {
    return index_.frames().capacity() * sizeof(IndexFrame) +
           index_.records().capacity() * sizeof(IndexRecord);
  }
  Status Locate(uint64_t i, IndexRecord* record, IndexFrame* frame) const override {
    if (i >= index_.num_records()) {
      return OutOfRange("index entry " + std::to_string(i) + " out of range (" +
                        std::to_string(index_.num_records()) + " records)");
    }
    *record = index_.records()[i];
    *frame = index_.frames()[record->frame];
    return Status::OK();
  }

 private:
  ShardIndex index_;
  std::vector<ShardChunk> chunks_;
  uint32_t checksum_ = 0;
};

}  // namespace

Status IndexLookup::LocateRange(uint64_t first, uint64_t count,
                                const IndexEntryVisitor& visit) const {
  IndexRecord record;
  IndexFrame frame;
  for (uint64_t i = first; i - first < count; ++i) {
    SLUICE_RETURN_IF_ERROR(Locate(i, &record, &frame));
    visit(i, record, frame);
  }
  return Status::OK();
}

Status IndexLookup::LocateRangeInto(uint64_t first, uint64_t count,
                                    std::vector<RangeEntry>* out) const {
  out->clear();
  return LocateRange(first, count, [out](uint64_t, const IndexRecord& r, const IndexFrame& f) {
    out->push_back(RangeEntry{r, f.file_offset});
  });
}

std::unique_ptr<IndexLookup> NewInMemoryIndexLookup(ShardIndex index, uint64_t chunk_bytes) {
  return std::make_unique<InMemoryIndexLookup>(std::move(index), chunk_bytes);
}

}  // namespace sluice::format

// ReindexAndAlign: the records a shard holds, mapped onto the positions of a stale index.
#include "format/index_realign.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace sluice::format {
namespace {

// Where a record is: its frame's file offset, its offset in the (decoded) frame, its length.
struct Place {
  uint64_t frame_offset = 0;
  uint64_t offset_in_frame = 0;
  uint64_t length = 0;
};

bool Before(const Place& a, const Place& b) {
  return std::tie(a.frame_offset, a.offset_in_frame) < std::tie(b.frame_offset, b.offset_in_frame);
}
bool Same(const Place& a, const Place& b) {
  return a.frame_offset == b.frame_offset && a.offset_in_frame == b.offset_in_frame &&
         a.length == b.length;
}

// Aligned (position, record) pairs, increasing in both: a merge of the opened index's
// entries with the recovered records by place. A walk that fails (the index file changed
// since open) leaves the entries after it unaligned.
std::vector<std::pair<uint64_t, uint64_t>> AlignedPairs(const IndexLookup& opened,
                                                        const ShardIndex& recovered) {
  std::vector<std::pair<uint64_t, uint64_t>> aligned;
  const auto& frames = recovered.frames();
  const auto& records = recovered.records();
  auto place_of = [&](uint64_t j) {
    const IndexRecord& r = records[j];
    return Place{frames[r.frame].file_offset, r.offset_in_frame, r.length};
  };
  uint64_t j = 0;
  (void)opened.LocateRange(0, opened.num_records(),
                           [&](uint64_t i, const IndexRecord& r, const IndexFrame& f) {
                             const Place p{f.file_offset, r.offset_in_frame, r.length};
                             while (j < records.size() && Before(place_of(j), p)) ++j;
                             if (j < records.size() && Same(place_of(j), p))
                               aligned.emplace_back(i, j++);
                           });
  return aligned;
}

}  // namespace

Result<std::unique_ptr<RealignedIndex>> ReindexAndAlign(
    io::FileSystem* fs, const std::string& shard_path, const IndexLookup& opened,
    const Status& failure, const RecordReaderOptions& read_options, uint64_t chunk_bytes) {
  auto out = std::make_unique<RealignedIndex>();
  SLUICE_ASSIGN_OR_RETURN(ShardIndex recovered,
                          ShardIndex::Recover(fs, shard_path, &out->lost, read_options));
  const uint64_t positions = opened.num_records();
  const uint64_t records = recovered.num_records();
  std::vector<std::pair<uint64_t, uint64_t>> anchors = AlignedPairs(opened, recovered);
  anchors.emplace_back(positions, records);  // the end closes the last gap
  out->map.assign(positions, kPositionLost);
  uint64_t i = 0;  // the first position after the previous anchor
  uint64_t j = 0;  // the first record after it
  for (const auto& [ai, aj] : anchors) {
    const uint64_t pairs = std::min(ai - i, aj - j);
    for (uint64_t k = 0; k < pairs; ++k) out->map[i + k] = (j + k) | kRecordMoved;
    out->lost_positions += ai - i - pairs;
    out->unserved_records += aj - j - pairs;
    if (ai < positions) out->map[ai] = aj;
    i = ai + 1;
    j = aj + 1;
  }
  ShardDamage damage{failure, out->lost, out->lost_positions};
  out->description = damage.Describe(records) +
                     " (re-indexed from the data while reading: the "
                     "index listed " +
                     std::to_string(positions) + ")";
  if (out->unserved_records > 0) {
    out->description += "; " + std::to_string(out->unserved_records) +
                        " record(s) the index did not list are not served (the read's order "
                        "was built on its counts; reopen after `sluice index` to read them)";
  }
  out->index = NewInMemoryIndexLookup(std::move(recovered), chunk_bytes);
  return out;
}

}  // namespace sluice::format

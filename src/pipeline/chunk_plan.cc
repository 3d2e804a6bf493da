// SnapshotChunks (global chunk ids) and ChunkPlan (a rank's chunks in the order it needs
// them): docs/order.md, "The chunk plan".
#include "sluice/pipeline/chunk_plan.h"

#include <algorithm>
#include <numeric>

namespace sluice::pipeline {

Result<std::shared_ptr<const SnapshotChunks>> SnapshotChunks::Of(const RecordSource& source) {
  auto out = std::make_shared<SnapshotChunks>();
  out->source_ = &source;
  auto starts = std::make_shared<std::vector<uint64_t>>();
  uint64_t id = 0;
  const std::vector<uint64_t>& counts = source.shard_records();
  for (uint32_t s = 0; s < counts.size(); ++s) {
    out->shard_first_chunk_.push_back(starts->size());
    uint64_t next = 0;
    for (const format::ShardChunk& c : source.chunks(s)) {
      if (c.first_record != next || c.records == 0 || c.records > counts[s] - next) {
        return InvalidArgument("read: the chunks of shard '" + source.shard_name(s) +
                               "' do not tile its " + std::to_string(counts[s]) +
                               " records (a chunk at record " + std::to_string(c.first_record) +
                               " with " + std::to_string(c.records) + ")");
      }
      starts->push_back(id + next);
      out->chunk_shard_.push_back(s);
      out->chunk_index_.push_back(next);
      next += c.records;
      out->decoded_bytes_ += c.decoded_bytes;
      out->largest_decoded_bytes_ = std::max(out->largest_decoded_bytes_, c.decoded_bytes);
    }
    if (next != counts[s]) {
      return InvalidArgument("read: the chunks of shard '" + source.shard_name(s) + "' cover " +
                             std::to_string(next) + " of its " + std::to_string(counts[s]) +
                             " records");
    }
    id += counts[s];
  }
  out->shard_first_chunk_.push_back(starts->size());
  starts->push_back(id);
  out->starts_ = std::move(starts);
  return std::shared_ptr<const SnapshotChunks>(std::move(out));
}

uint32_t SnapshotChunks::ShardOf(uint64_t chunk) const { return chunk_shard_[chunk]; }

const format::ShardChunk& SnapshotChunks::Info(uint64_t chunk) const {
  const uint32_t shard = ShardOf(chunk);
  return source_->chunks(shard)[chunk - shard_first_chunk_[shard]];
}

ChunkPlan::ChunkPlan(std::shared_ptr<const GlobalOrder> order,
                     std::shared_ptr<const SnapshotChunks> chunks, ShardingOptions sharding,
                     uint64_t start, uint64_t from)
    : order_(std::move(order)),
      chunks_(std::move(chunks)),
      slice_(order_.get(), sharding, start),
      from_(from) {
  const ChunkOrder* co = order_->chunk_order();
  if (co == nullptr || from_ >= slice_.size()) return;
  const uint64_t lanes = co->lanes();
  const uint64_t world = sharding.world_size;
  const uint64_t base = slice_.start() + sharding.rank;
  const uint64_t g = std::gcd(world, lanes);
  const uint64_t p_from = base + from_ * world;
  // The lanes this rank's positions fall on: l = base + k W (mod L), i.e. l = base (mod g).
  for (uint64_t l = base % g; l < lanes; l += g) {
    const uint32_t lane = static_cast<uint32_t>(l);
    const uint64_t q0 = p_from > l ? (p_from - l + lanes - 1) / lanes : 0;
    if (q0 >= co->LaneLength(lane)) continue;
    QueueLane(lane, co->WindowAt(q0 * lanes + l).index);
  }
}

bool ChunkPlan::SamplesOf(const ChunkOrder::Window& w, uint64_t* first, uint64_t* last) const {
  const uint64_t lanes = order_->chunk_order()->lanes();
  const uint64_t world = slice_.sharding().world_size;
  const uint64_t base = slice_.start() + slice_.sharding().rank;
  const uint64_t p1 = w.first * lanes + w.lane;
  const uint64_t p2 = (w.end - 1) * lanes + w.lane;
  const uint64_t k1 = p1 <= base ? 0 : (p1 - base + world - 1) / world;
  *first = std::max(k1, from_);
  *last = 0;
  if (p2 < base || slice_.size() == 0) return false;
  *last = std::min((p2 - base) / world, slice_.size() - 1);
  return *first <= *last;
}

void ChunkPlan::QueueLane(uint32_t lane, uint64_t window) {
  const ChunkOrder* co = order_->chunk_order();
  for (; window < co->WindowsInLane(lane); ++window) {
    uint64_t first = 0, last = 0;
    if (SamplesOf(co->LaneWindow(lane, window), &first, &last)) {
      lanes_.push(Pending{first, lane, window});
      return;
    }
    if (first >= slice_.size()) return;  // past the rank's last sample: nothing later either
  }
}

bool ChunkPlan::Next(ChunkNeed* need) {
  const ChunkOrder* co = order_->chunk_order();
  if (co == nullptr) return false;
  while (next_slot_ >= current_.end_slot) {
    if (lanes_.empty()) return false;
    const Pending p = lanes_.top();
    lanes_.pop();
    current_ = co->LaneWindow(p.lane, p.window);
    SamplesOf(current_, &current_first_, &current_last_);
    next_slot_ = current_.first_slot;
    QueueLane(p.lane, p.window + 1);
  }
  const uint64_t chunk = co->ChunkInSlot(next_slot_++);
  need->chunk = chunk;
  need->shard = chunks_->ShardOf(chunk);
  need->info = chunks_->Info(chunk);
  need->first_sample = current_first_;
  need->last_sample = current_last_;
  return true;
}

}  // namespace sluice::pipeline

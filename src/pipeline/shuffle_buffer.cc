// Buffer shuffle (tf.data style): hold `buffer_size` elements of the shard-order stream, emit
// a random one, refill its slot from the input. Reads stay sequential (the point of this
// mode on remote storage); the price is a weaker shuffle (see the quality test).
//
// State: the record positions the buffer held when the consumer's last element left it,
// never bytes. Because prefetch downstream runs ahead, the stage keeps an undo log of its
// emissions since the last delivered one and rolls its current contents back to that point
// when asked to Save.
#include <deque>
#include <mutex>

#include "nodes.h"

namespace sluice::pipeline {
namespace {

constexpr uint64_t kBufferTag = 0x6275666665720006ULL;  // "buffer": slot choices of the buffer

class ShuffleBufferNode final : public DatasetNode {
 public:
  ShuffleBufferNode(NodePtr input, size_t buffer_size, uint64_t seed)
      : DatasetNode(input, input->schema()), buffer_size_(buffer_size), seed_(seed) {}
  std::string_view kind() const override { return "shuffle_buffer"; }
  size_t buffer_size() const { return buffer_size_; }
  uint64_t seed() const { return seed_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

 private:
  size_t buffer_size_;
  uint64_t seed_;
};

class ShuffleBufferIterator final : public StageIterator {
 public:
  ShuffleBufferIterator(PipelineContext* ctx, const ShuffleBufferNode* node,
                        std::unique_ptr<StageIterator> input, size_t slot)
      : StageIterator(ctx, node, std::move(input)),
        node_cfg_(node),
        sharding_(SourceOf(node).sharding),
        slot_(slot),
        tag_(ctx->NewInstanceTag()),
        capacity_(node->buffer_size()),
        timing_(counters_) {
    counters_->capacity.store(capacity_);
  }
  ~ShuffleBufferIterator() override { ctx_->budget()->Release(held_bytes_); }

  Result<bool> Next(Element* out) override;
  Status Save(const Mark& delivered, StateWriter* w) const override;
  Status Restore(const StateReader& r) override;
  Status Refetch(const RecordId& id, Element* out) override { return input_->Refetch(id, out); }

 private:
  // One emission, enough to undo it: slot `slot` held record `id` before.
  struct Undo {
    uint64_t emission;
    uint32_t slot;
    bool shrink;  // the input had ended: the last slot moved into `slot`
    RecordId id;
  };
  // Pulls into buf_[i]; false at the end of the input.
  Result<bool> Pull(size_t i);
  void TrimHistoryLocked();

  const ShuffleBufferNode* node_cfg_;
  const ShardingOptions sharding_;
  const size_t slot_;
  const uint64_t tag_;
  const size_t capacity_;  // buffer_size
  SyncTiming timing_;
  // Grows as it fills, up to capacity_: a buffer larger than the input costs what the input
  // holds, not what buffer_size says.
  std::vector<Element> buf_;
  size_t fill_ = 0;
  bool input_done_ = false;
  Mark last_in_;             // mark of the latest element pulled from the input
  uint64_t held_bytes_ = 0;  // charged to the memory budget

  mutable std::mutex mu_;  // guards the members below (Save runs on the consumer's thread)
  uint64_t emitted_ = 0;
  std::vector<RecordId> held_;  // ids of buf_[0, fill_)
  std::deque<Undo> history_;    // emissions after the last delivered one
};

Result<bool> ShuffleBufferIterator::Pull(size_t i) {
  if (i == buf_.size()) buf_.emplace_back();
  Result<bool> more = timing_.InputNext(input_.get(), &buf_[i]);
  if (!more.ok() || !*more) return more;
  last_in_ = buf_[i].mark;
  uint64_t bytes = buf_[i].bytes();
  held_bytes_ += bytes;
  ctx_->budget()->Charge(bytes);
  return true;
}

Result<bool> ShuffleBufferIterator::Next(Element* out) {
  timing_.Begin();
  while (!input_done_ && fill_ < capacity_) {
    if (stopped()) return StoppedError();
    SLUICE_ASSIGN_OR_RETURN(bool more, Pull(fill_));
    if (!more) break;
    std::lock_guard<std::mutex> l(mu_);
    held_.push_back(buf_[fill_++].id);
  }
  if (fill_ < capacity_) input_done_ = true;
  if (fill_ == 0) return false;

  uint64_t key =
      CombineKey(CombineKey(CombineKey(kBufferTag, node_cfg_->seed()), last_in_.epoch), emitted_);
  size_t j = static_cast<size_t>((static_cast<unsigned __int128>(key) * fill_) >> 64);
  std::swap(*out, buf_[j]);
  uint64_t bytes = out->bytes();
  held_bytes_ -= std::min(held_bytes_, bytes);
  ctx_->budget()->Release(bytes);

  bool refilled = false;
  if (!input_done_) {
    SLUICE_ASSIGN_OR_RETURN(refilled, Pull(j));
    input_done_ = !refilled;
  }
  if (!refilled) std::swap(buf_[j], buf_[--fill_]);
  {
    std::lock_guard<std::mutex> l(mu_);
    history_.push_back(Undo{emitted_, static_cast<uint32_t>(j), !refilled, out->id});
    held_[j] = refilled ? buf_[j].id : held_.back();
    if (!refilled) held_.pop_back();
    ++emitted_;
    out->mark = last_in_;
    out->mark.counters[slot_] = PipelineContext::TaggedCount(tag_, emitted_);
    TrimHistoryLocked();
  }
  counters_->buffered.store(fill_);
  timing_.End(1, timing_.sampled() ? bytes : 0);
  return true;
}

void ShuffleBufferIterator::TrimHistoryLocked() {
  // Save() only ever asks for the state as of the consumer's latest element.
  uint64_t tagged = ctx_->delivered_counters[slot_].load(std::memory_order_relaxed);
  if (PipelineContext::TagOf(tagged) != tag_) return;
  uint64_t delivered = PipelineContext::CountOf(tagged);
  while (!history_.empty() && history_.front().emission < delivered) history_.pop_front();
}

Status ShuffleBufferIterator::Save(const Mark& delivered, StateWriter* w) const {
  std::vector<uint64_t> positions;
  uint64_t at = 0;
  uint64_t epoch = 0;
  if (delivered.valid) {
    std::lock_guard<std::mutex> l(mu_);
    at = PipelineContext::CountOf(delivered.counters[slot_]);
    epoch = delivered.epoch;
    if (!history_.empty() && history_.front().emission > at) {
      return Internal("shuffle buffer: history no longer reaches the delivered element");
    }
    std::vector<RecordId> held = held_;
    for (auto u = history_.rbegin(); u != history_.rend() && u->emission >= at; ++u) {
      if (!u->shrink) {
        held[u->slot] = u->id;
      } else if (u->slot == held.size()) {
        held.push_back(u->id);
      } else {
        held.push_back(held[u->slot]);
        held[u->slot] = u->id;
      }
    }
    for (const RecordId& id : held) positions.push_back(id.position);
  }
  w->PutU64(key_, "emitted", at);
  w->PutU64(key_, "epoch", epoch);
  w->PutU64(key_, "rank", sharding_.rank);
  w->PutU64(key_, "world", sharding_.world_size);
  w->PutU64s(key_, "held", std::move(positions));
  return input_->Save(delivered, w);
}

Status ShuffleBufferIterator::Restore(const StateReader& r) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t rank, r.GetU64(key_, "rank"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t world, r.GetU64(key_, "world"));
  if (rank != sharding_.rank || world != sharding_.world_size) {
    return FailedPrecondition("buffer shuffle state of rank " + std::to_string(rank) + "/" +
                              std::to_string(world) + " cannot be restored as rank " +
                              std::to_string(sharding_.rank) + "/" +
                              std::to_string(sharding_.world_size) +
                              ": elastic resume needs shuffle mode global, block or none");
  }
  SLUICE_ASSIGN_OR_RETURN(uint64_t emitted, r.GetU64(key_, "emitted"));
  SLUICE_ASSIGN_OR_RETURN(uint64_t epoch, r.GetU64(key_, "epoch"));
  SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> positions, r.GetU64s(key_, "held"));
  if (positions.size() > capacity_) {
    return InvalidArgument("iterator state holds " + std::to_string(positions.size()) +
                           " buffered records; the buffer has " + std::to_string(capacity_));
  }
  SLUICE_RETURN_IF_ERROR(input_->Restore(r));
  std::lock_guard<std::mutex> l(mu_);
  if (buf_.size() < positions.size()) buf_.resize(positions.size());
  for (size_t i = 0; i < positions.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(input_->Refetch(RecordId{epoch, positions[i], 0, 0}, &buf_[i]));
    uint64_t bytes = buf_[i].bytes();
    held_bytes_ += bytes;
    ctx_->budget()->Charge(bytes);
    held_.push_back(buf_[i].id);
  }
  fill_ = positions.size();
  emitted_ = emitted;
  input_done_ = emitted > 0 && fill_ < capacity_;
  last_in_ = Mark();
  last_in_.valid = true;
  last_in_.epoch = epoch;  // cursor 0: the source's restored position
  return Status::OK();
}

Result<std::unique_ptr<StageIterator>> ShuffleBufferNode::MakeIterator(
    PipelineContext* ctx, const IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  SLUICE_ASSIGN_OR_RETURN(size_t slot, ctx->CounterSlot(this));
  return std::unique_ptr<StageIterator>(
      std::make_unique<ShuffleBufferIterator>(ctx, this, std::move(input), slot));
}

}  // namespace

Result<NodePtr> MakeShuffleBufferNode(NodePtr input, size_t buffer_size, uint64_t seed) {
  if (buffer_size == 0) {
    return InvalidArgument(
        "shuffle: buffer_size must be >= 1 in mode buffer (0 would not shuffle; 1 keeps the "
        "input order, as in tf.data)");
  }
  return NodePtr(std::make_shared<ShuffleBufferNode>(std::move(input), buffer_size, seed));
}

bool AsShuffleBufferNode(const DatasetNode* node, size_t* buffer_size, uint64_t* seed) {
  auto* sb = dynamic_cast<const ShuffleBufferNode*>(node);
  if (sb == nullptr) return false;
  *buffer_size = sb->buffer_size();
  *seed = sb->seed();
  return true;
}

}  // namespace sluice::pipeline

// take(n) and skip(n). take records in each element's mark how many it had let through, so
// a restore knows how many are left; skip is complete for every element it lets through.
#include "nodes.h"

namespace sluice::pipeline {
namespace {

class CountNode final : public DatasetNode {
 public:
  CountNode(NodePtr input, uint64_t count, bool take)
      : DatasetNode(input, input->schema()), count_(count), take_(take) {}
  std::string_view kind() const override { return take_ ? "take" : "skip"; }
  uint64_t count() const { return count_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

 private:
  uint64_t count_;
  bool take_;
};

class TakeIterator final : public StageIterator {
 public:
  TakeIterator(PipelineContext* ctx, const CountNode* node, std::unique_ptr<StageIterator> input,
               size_t slot)
      : StageIterator(ctx, node, std::move(input)),
        count_(node->count()),
        slot_(slot),
        timing_(counters_) {}

  Result<bool> Next(Element* out) override {
    if (taken_ >= count_) return false;
    timing_.Begin();
    Result<bool> more = timing_.InputNext(input_.get(), out);
    if (more.ok() && *more) {
      out->mark.counters[slot_] = ++taken_;
      timing_.End(1, timing_.sampled() ? out->bytes() : 0);
    }
    return more;
  }
  Status Save(const Mark& delivered, StateWriter* w) const override {
    w->PutU64(key_, "taken", delivered.valid ? delivered.counters[slot_] : 0);
    return input_->Save(delivered, w);
  }
  Status Restore(const StateReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(taken_, r.GetU64(key_, "taken"));
    return input_->Restore(r);
  }
  Status Refetch(const RecordId& id, Element* out) override { return input_->Refetch(id, out); }

 private:
  const uint64_t count_;
  const size_t slot_;
  SyncTiming timing_;
  uint64_t taken_ = 0;
};

class SkipIterator final : public StageIterator {
 public:
  SkipIterator(PipelineContext* ctx, const CountNode* node, std::unique_ptr<StageIterator> input)
      : StageIterator(ctx, node, std::move(input)), count_(node->count()), timing_(counters_) {}

  Result<bool> Next(Element* out) override {
    timing_.Begin();
    for (; skipped_ < count_; ++skipped_) {
      if (stopped()) return StoppedError();
      Result<bool> more = input_->Next(out);
      if (!more.ok() || !*more) return more;
    }
    Result<bool> more = timing_.InputNext(input_.get(), out);
    if (more.ok() && *more) timing_.End(1, timing_.sampled() ? out->bytes() : 0);
    return more;
  }
  Status Save(const Mark& delivered, StateWriter* w) const override {
    // Every delivered element went through here after the skipping was over.
    w->PutU64(key_, "skipped", delivered.valid ? count_ : 0);
    return input_->Save(delivered, w);
  }
  Status Restore(const StateReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(skipped_, r.GetU64(key_, "skipped"));
    return input_->Restore(r);
  }
  Status Refetch(const RecordId& id, Element* out) override { return input_->Refetch(id, out); }

 private:
  const uint64_t count_;
  SyncTiming timing_;
  uint64_t skipped_ = 0;
};

Result<std::unique_ptr<StageIterator>> CountNode::MakeIterator(PipelineContext* ctx,
                                                               const IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  if (!take_) {
    return std::unique_ptr<StageIterator>(
        std::make_unique<SkipIterator>(ctx, this, std::move(input)));
  }
  SLUICE_ASSIGN_OR_RETURN(size_t slot, ctx->CounterSlot(this));
  return std::unique_ptr<StageIterator>(
      std::make_unique<TakeIterator>(ctx, this, std::move(input), slot));
}

}  // namespace

NodePtr MakeTakeNode(NodePtr input, uint64_t count) {
  return std::make_shared<CountNode>(std::move(input), count, true);
}

NodePtr MakeSkipNode(NodePtr input, uint64_t count) {
  return std::make_shared<CountNode>(std::move(input), count, false);
}

}  // namespace sluice::pipeline

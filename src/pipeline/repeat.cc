// repeat(epochs): runs its input again and again, each time for the next epoch (a new
// global order). The input of a finished epoch stays alive ("retired") until the consumer
// has received an element of a later epoch, so a Save() that lands before the boundary can
// still ask the stages of that epoch for their state.
#include <deque>
#include <mutex>

#include "nodes.h"

namespace sluice::pipeline {
namespace {

class RepeatNode final : public DatasetNode {
 public:
  RepeatNode(NodePtr input, int64_t epochs)
      : DatasetNode(input, input->schema()), epochs_(epochs) {}
  std::string_view kind() const override { return "repeat"; }
  int64_t epochs() const { return epochs_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

 private:
  int64_t epochs_;  // -1: forever
};

class RepeatIterator final : public StageIterator {
 public:
  RepeatIterator(PipelineContext* ctx, const RepeatNode* node, std::unique_ptr<StageIterator> input,
                 IteratorArgs args)
      : StageIterator(ctx, node, std::move(input)),
        repeat_(node),
        args_(args),
        first_epoch_(SourceOf(node).read.epoch + args.epoch) {}

  ~RepeatIterator() override {
    std::lock_guard<std::mutex> l(mu_);
    retired_.clear();
  }

  Result<bool> Next(Element* out) override;
  Status Save(const Mark& delivered, StateWriter* w) const override;
  Status Restore(const StateReader& r) override;
  Status Refetch(const RecordId& id, Element* out) override { return input_->Refetch(id, out); }
  void Stop() override {
    std::lock_guard<std::mutex> l(mu_);
    StageIterator::Stop();
  }

 private:
  Status StartEpoch(uint64_t index);
  void ForgetRetired();

  const RepeatNode* repeat_;
  const IteratorArgs args_;
  const uint64_t first_epoch_;  // the epoch of index 0
  uint64_t index_ = 0;          // epochs started before the current one
  bool produced_ = false;       // the current epoch produced an element
  bool done_ = false;

  // Guards input_ (swapped at epoch boundaries, read by Save and Stop on other threads) and
  // retired_. Never held while calling input_->Next.
  mutable std::mutex mu_;
  std::deque<std::pair<uint64_t, std::unique_ptr<StageIterator>>> retired_;  // (epoch, input)
};

Status RepeatIterator::StartEpoch(uint64_t index) {
  IteratorArgs next_args{args_.epoch + index};
  SLUICE_ASSIGN_OR_RETURN(auto next, repeat_->input()->MakeIterator(ctx_, next_args));
  std::lock_guard<std::mutex> l(mu_);
  if (stopped()) next->Stop();
  retired_.emplace_back(first_epoch_ + index_, std::move(input_));
  input_ = std::move(next);
  index_ = index;
  produced_ = false;
  return Status::OK();
}

void RepeatIterator::ForgetRetired() {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t delivered = ctx_->delivered_epoch.load(std::memory_order_acquire);
  while (!retired_.empty() && retired_.front().first < delivered) retired_.pop_front();
}

Result<bool> RepeatIterator::Next(Element* out) {
  for (;;) {
    if (done_) return false;
    if (stopped()) return StoppedError();
    Result<bool> more = input_->Next(out);
    if (!more.ok()) return more.status();
    if (*more) {
      produced_ = true;
      if (!retired_.empty()) ForgetRetired();
      return true;
    }
    bool last = repeat_->epochs() >= 0 && index_ + 1 >= static_cast<uint64_t>(repeat_->epochs());
    if (last || !produced_) {  // an epoch without elements would repeat forever
      done_ = true;
      return false;
    }
    SLUICE_RETURN_IF_ERROR(StartEpoch(index_ + 1));
  }
}

Status RepeatIterator::Save(const Mark& delivered, StateWriter* w) const {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t epoch = delivered.valid ? delivered.epoch : first_epoch_ + index_;
  w->PutU64(key_, "epoch_index", epoch - first_epoch_);
  // The stages of the delivered element's epoch know its state.
  for (const auto& [e, it] : retired_) {
    if (e == epoch) return it->Save(delivered, w);
  }
  return input_->Save(delivered, w);
}

Status RepeatIterator::Restore(const StateReader& r) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t index, r.GetU64(key_, "epoch_index"));
  if (repeat_->epochs() >= 0 && index >= static_cast<uint64_t>(repeat_->epochs())) {
    return InvalidArgument("iterator state: epoch index " + std::to_string(index) + " of repeat(" +
                           std::to_string(repeat_->epochs()) + ")");
  }
  if (index != index_) {
    SLUICE_RETURN_IF_ERROR(StartEpoch(index));
    std::lock_guard<std::mutex> l(mu_);
    retired_.clear();
  }
  produced_ = true;  // the restored epoch did produce elements before the save
  return input_->Restore(r);
}

Result<std::unique_ptr<StageIterator>> RepeatNode::MakeIterator(PipelineContext* ctx,
                                                                const IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  return std::unique_ptr<StageIterator>(
      std::make_unique<RepeatIterator>(ctx, this, std::move(input), args));
}

}  // namespace

NodePtr MakeRepeatNode(NodePtr input, int64_t epochs) {
  return std::make_shared<RepeatNode>(std::move(input), epochs < 0 ? -1 : epochs);
}

}  // namespace sluice::pipeline

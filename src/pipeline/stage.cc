#include "stage.h"

namespace sluice::pipeline {

StageIterator::StageIterator(PipelineContext* ctx, const DatasetNode* node,
                             std::unique_ptr<StageIterator> input)
    : ctx_(ctx),
      node_(node),
      counters_(ctx->Counters(node)),
      key_(ctx->StateKey(node)),
      input_(std::move(input)) {}

Status StageIterator::Save(const Mark& delivered, StateWriter* w) const {
  return input_ ? input_->Save(delivered, w) : Status::OK();
}

Status StageIterator::Restore(const StateReader& r) {
  return input_ ? input_->Restore(r) : Status::OK();
}

Result<bool> StageIterator::NextSpan(size_t max, ElementRun* run) {
  (void)max;
  (void)run;
  return Unimplemented(node_->name() + " does not hand out runs of elements");
}

Status StageIterator::Refetch(const RecordId& id, Element* out) {
  (void)id;
  (void)out;
  return Unimplemented(node_->name() +
                       " cannot re-produce a single record (a stateful stage above it needs that "
                       "to restore; place bucket_by_length / buffer shuffle before it)");
}

void StageIterator::Stop() {
  stopped_.store(true, std::memory_order_relaxed);
  if (input_) input_->Stop();
}

}  // namespace sluice::pipeline

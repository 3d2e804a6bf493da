// batch(n) and padded_batch(n): gather n elements (reusing Element objects) and stack each
// feature into one contiguous buffer. The batch carries its last element's mark, so a Save
// after a batch resumes right after it.
#include "nodes.h"
#include "slot_planner.h"
#include "stacking.h"

namespace sluice::pipeline {
namespace {

class BatchNode final : public DatasetNode {
 public:
  BatchNode(NodePtr input, Schema schema, size_t batch_size, bool drop_remainder,
            std::optional<PaddingPlan> plan)
      : DatasetNode(std::move(input), std::move(schema)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        plan_(std::move(plan)),
        slot_map_(plan_ ? nullptr : FindSlotMap(this->input(), &slot_feature_)) {}
  std::string_view kind() const override { return plan_ ? "padded_batch" : "batch"; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

  size_t batch_size() const { return batch_size_; }
  bool SlotsFit(const PipelineContext* ctx) const;
  bool drop_remainder() const { return drop_remainder_; }
  const std::optional<PaddingPlan>& plan() const { return plan_; }

 private:
  size_t batch_size_;
  bool drop_remainder_;
  std::optional<PaddingPlan> plan_;  // set for padded_batch
  size_t slot_feature_ = 0;
  const DatasetNode* slot_map_;  // map into slot: the map writing slot_feature_, or null
};

class BatchIterator final : public StageIterator {
 public:
  BatchIterator(PipelineContext* ctx, const BatchNode* node, std::unique_ptr<StageIterator> input,
                std::shared_ptr<SlotPlanner> slots)
      : StageIterator(ctx, node, std::move(input)),
        batch_(node),
        timing_(counters_),
        slots_(std::move(slots)) {
    stack_.pool = ctx->buffers();
    stack_.slots = slots_.get();
    stack_.schema = &node->input()->schema();
    stack_.ctx = ctx;
    stack_.stage = node->name();
    const Schema& in = node->input()->schema();
    by_runs_ = !node->plan() && slots_ == nullptr && input_->spans() && in.size() == 1 &&
               in[0].dtype == DType::kString && in[0].shape.rank() == 0;
    if (by_runs_) input_->RunsOnly();
  }

  Result<bool> Next(Element* out) override {
    if (done_) return false;
    timing_.Begin();
    SLUICE_ASSIGN_OR_RETURN(const size_t n, by_runs_ ? GatherRuns() : GatherElements());
    if (n < batch_->batch_size()) done_ = true;
    if (n == 0 || (done_ && batch_->drop_remainder())) {
      timing_.End(0, 0);
      return false;
    }
    if (by_runs_) {
      runs_.Finish(stack_, out);
    } else {
      Status s = batch_->plan() ? StackPadded(stack_, *batch_->plan(), pending_, n, out)
                                : StackBatch(stack_, pending_, n, out);
      if (!s.ok()) return s;
      if (slots_) {  // the elements' views would pin this batch's buffer until reused
        for (size_t i = 0; i < n; ++i) pending_[i].tensors[slots_->feature()].Reset();
      }
    }
    timing_.End(1, timing_.sampled() ? out->bytes() : 0);
    return true;
  }

 private:
  // Up to batch_size elements into pending_, one Next each; how many arrived.
  Result<size_t> GatherElements() {
    timing_.InputSpanBegin();
    size_t n = 0;
    while (n < batch_->batch_size()) {
      if (stopped()) return StoppedError();
      // Grows with the elements that arrive, not with batch_size: batch(2**40) over a small
      // dataset is one batch of everything, as in tf.data.
      if (n == pending_.size()) pending_.emplace_back();
      Result<bool> more = input_->Next(&pending_[n]);
      if (!more.ok()) return more.status();
      if (!*more) break;
      ++n;
    }
    timing_.InputSpanEnd();
    return n;
  }

  // Over the read stage: up to batch_size records copied into runs_ out of the runs the read
  // stage holds (NextSpan), not handed over one element at a time and gathered first (the
  // same batches; the hand-off and stacking were ~8% of a small-record pipeline's CPU).
  Result<size_t> GatherRuns() {
    runs_.Clear();
    while (runs_.size() < batch_->batch_size()) {
      if (stopped()) return StoppedError();
      ElementRun run;
      timing_.InputSpanBegin();  // the wait for the run, not the copy below (busy)
      Result<bool> more = input_->NextSpan(batch_->batch_size() - runs_.size(), &run);
      timing_.InputSpanEnd();
      if (!more.ok()) return more.status();
      if (!*more) break;
      runs_.Add(run);
    }
    return runs_.size();
  }

  const BatchNode* batch_;
  StackContext stack_;
  SyncTiming timing_;
  std::vector<Element> pending_;  // reused across batches; grows to the largest batch
  bool done_ = false;
  std::shared_ptr<SlotPlanner> slots_;  // map into slot, or null
  bool by_runs_ = false;                // plain batch of the read stage's records: NextByRuns
  StringRunStacker runs_;
};

Result<std::unique_ptr<StageIterator>> BatchNode::MakeIterator(PipelineContext* ctx,
                                                               const IteratorArgs& args) const {
  std::shared_ptr<SlotPlanner> slots;
  if (slot_map_ != nullptr && SlotsFit(ctx)) {
    const FeatureInfo& f = schema()[slot_feature_];
    slots = std::make_shared<SlotPlanner>(slot_feature_, batch_size_, f.dtype,
                                          f.shape.WithoutFirst(), ctx->buffers());
    ctx->SetSlotPlanner(slot_map_, slots);  // before the map iterators below are built
  }
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  return std::unique_ptr<StageIterator>(
      std::make_unique<BatchIterator>(ctx, this, std::move(input), std::move(slots)));
}

// Map into slot allocates whole batch buffers before the elements arrive: only for batches
// that fit the memory budget (else the batch is stacked by copying, which allocates only
// for the elements that do arrive).
bool BatchNode::SlotsFit(const PipelineContext* ctx) const {
  const FeatureInfo& f = schema()[slot_feature_];
  uint64_t slot_bytes =
      static_cast<uint64_t>(f.shape.WithoutFirst().num_elements()) * DTypeSize(f.dtype);
  uint64_t batch_bytes = 0;
  return !__builtin_mul_overflow(slot_bytes, uint64_t{batch_size_}, &batch_bytes) &&
         batch_bytes <= ctx->budget()->limit();
}

int64_t BatchDim(size_t batch_size, bool drop_remainder) {
  return drop_remainder ? static_cast<int64_t>(batch_size) : -1;
}

}  // namespace

Result<NodePtr> MakeBatchNode(NodePtr input, const BatchOptions& options) {
  if (options.batch_size == 0) return InvalidArgument("batch: batch_size must be >= 1");
  Schema schema =
      BatchSchema(input->schema(), BatchDim(options.batch_size, options.drop_remainder));
  return NodePtr(std::make_shared<BatchNode>(std::move(input), std::move(schema),
                                             options.batch_size, options.drop_remainder,
                                             std::nullopt));
}

Result<NodePtr> MakePaddedBatchNode(NodePtr input, const PaddedBatchOptions& options) {
  if (options.batch_size == 0) return InvalidArgument("padded_batch: batch_size must be >= 1");
  Schema schema;
  SLUICE_ASSIGN_OR_RETURN(
      PaddingPlan plan, PlanPadding(input->schema(), options.padding,
                                    BatchDim(options.batch_size, options.drop_remainder), &schema));
  return NodePtr(std::make_shared<BatchNode>(std::move(input), std::move(schema),
                                             options.batch_size, options.drop_remainder,
                                             std::move(plan)));
}

}  // namespace sluice::pipeline

// bucket_by_length: route each element to the bucket of its length, emit a padded batch when
// a bucket is full, flush partial buckets at the end of the input.
//
// State: which records each bucket held when the consumer's last batch left the stage. The
// stage snapshots the held (epoch, position) pairs at each emission, keeps the snapshots of
// batches not yet delivered, and on Restore re-produces the held elements through its input
// (Refetch), never storing bytes.
#include <algorithm>

#include "emission_history.h"
#include "nodes.h"
#include "stacking.h"

namespace sluice::pipeline {
namespace {

class BucketNode final : public DatasetNode {
 public:
  BucketNode(NodePtr input, Schema schema, BucketOptions options, size_t length_index,
             PaddingPlan plan)
      : DatasetNode(std::move(input), std::move(schema)),
        options_(std::move(options)),
        length_index_(length_index),
        plan_(std::move(plan)) {}
  std::string_view kind() const override { return "bucket_by_length"; }
  const BucketOptions& options() const { return options_; }
  size_t length_index() const { return length_index_; }
  const PaddingPlan& plan() const { return plan_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

 private:
  BucketOptions options_;
  size_t length_index_;
  PaddingPlan plan_;
};

class BucketIterator final : public StageIterator {
 public:
  BucketIterator(PipelineContext* ctx, const BucketNode* node, std::unique_ptr<StageIterator> input,
                 size_t slot)
      : StageIterator(ctx, node, std::move(input)),
        bucket_(node),
        history_(ctx, slot),
        timing_(counters_) {
    stack_.pool = ctx->buffers();
    stack_.schema = &node->input()->schema();
    stack_.ctx = ctx;
    stack_.stage = node->name();
    const auto& sizes = node->options().batch_sizes;
    buckets_.resize(sizes.size());  // each grows with its elements, not to its batch size
    fill_.assign(sizes.size(), 0);
  }

  Result<bool> Next(Element* out) override;
  Status Save(const Mark& delivered, StateWriter* w) const override;
  Status Restore(const StateReader& r) override;

 private:
  Result<size_t> BucketOf(const Element& e) const;
  Status Emit(size_t b, Element* out);

  const BucketNode* bucket_;
  // After each emission: what the buckets hold, as (bucket, epoch, position) triples.
  EmissionHistory history_;
  SyncTiming timing_;
  StackContext stack_;
  // Element i of bucket b lives in buckets_[b][i], i < fill_[b]; the vectors keep their
  // Element objects for reuse.
  Element& SlotOf(size_t b) {
    if (fill_[b] == buckets_[b].size()) buckets_[b].emplace_back();
    return buckets_[b][fill_[b]++];
  }

  std::vector<std::vector<Element>> buckets_;
  std::vector<size_t> fill_;
  Element staging_;
  Mark last_in_;  // mark of the latest element pulled
  bool input_done_ = false;
  size_t flush_ = 0;  // next bucket to flush once the input ended
};

Result<size_t> BucketIterator::BucketOf(const Element& e) const {
  const Tensor& t = e.tensors.at(bucket_->length_index());
  if (t.shape().rank() == 0) {
    return InvalidArgument(node_->name() + ": feature '" + bucket_->options().length_feature +
                           "' is a scalar; its length is undefined: " + ctx_->DescribeRecord(e.id));
  }
  const auto& bounds = bucket_->options().boundaries;
  return static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), t.shape()[0]) -
                             bounds.begin());
}

Status BucketIterator::Emit(size_t b, Element* out) {
  SLUICE_RETURN_IF_ERROR(StackPadded(stack_, bucket_->plan(), buckets_[b], fill_[b], out));
  fill_[b] = 0;
  std::vector<uint64_t> held;
  for (size_t k = 0; k < buckets_.size(); ++k) {
    for (size_t i = 0; i < fill_[k]; ++i) {
      const RecordId& id = buckets_[k][i].id;
      held.insert(held.end(), {k, id.epoch, id.position});
    }
  }
  history_.Record(std::move(held), last_in_, &out->mark);
  return Status::OK();
}

Result<bool> BucketIterator::Next(Element* out) {
  timing_.Begin();
  const auto& sizes = bucket_->options().batch_sizes;
  while (!input_done_) {
    if (stopped()) return StoppedError();
    SLUICE_ASSIGN_OR_RETURN(bool more, timing_.InputNext(input_.get(), &staging_));
    if (!more) {
      input_done_ = true;
      break;
    }
    last_in_ = staging_.mark;
    SLUICE_ASSIGN_OR_RETURN(size_t b, BucketOf(staging_));
    std::swap(staging_, SlotOf(b));
    if (fill_[b] == sizes[b]) {
      SLUICE_RETURN_IF_ERROR(Emit(b, out));
      timing_.End(1, timing_.sampled() ? out->bytes() : 0);
      return true;
    }
  }
  for (; flush_ < buckets_.size(); ++flush_) {
    if (fill_[flush_] == 0 || bucket_->options().drop_remainder) continue;
    SLUICE_RETURN_IF_ERROR(Emit(flush_, out));
    return true;
  }
  return false;
}

Status BucketIterator::Save(const Mark& delivered, StateWriter* w) const {
  SLUICE_RETURN_IF_ERROR(history_.Save(key_, node_->name(), delivered, w));
  return input_->Save(delivered, w);
}

Status BucketIterator::Restore(const StateReader& r) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> held,
                          history_.Restore(key_, node_->name(), r, &last_in_));
  if (held.size() % 3 != 0)
    return InvalidArgument("iterator state: malformed bucket_by_length state");
  SLUICE_RETURN_IF_ERROR(input_->Restore(r));
  for (size_t i = 0; i < held.size(); i += 3) {
    size_t b = static_cast<size_t>(held[i]);
    if (b >= buckets_.size() || fill_[b] + 1 >= bucket_->options().batch_sizes[b]) {
      return InvalidArgument("iterator state: bucket " + std::to_string(b) + " overfull");
    }
    SLUICE_RETURN_IF_ERROR(input_->Refetch(RecordId{held[i + 1], held[i + 2], 0, 0}, &SlotOf(b)));
  }
  return Status::OK();
}

Result<std::unique_ptr<StageIterator>> BucketNode::MakeIterator(PipelineContext* ctx,
                                                                const IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  SLUICE_ASSIGN_OR_RETURN(size_t slot, ctx->CounterSlot(this));
  return std::unique_ptr<StageIterator>(
      std::make_unique<BucketIterator>(ctx, this, std::move(input), slot));
}

}  // namespace

Result<NodePtr> MakeBucketNode(NodePtr input, const BucketOptions& options) {
  if (options.batch_sizes.size() != options.boundaries.size() + 1) {
    return InvalidArgument("bucket_by_length: " + std::to_string(options.boundaries.size()) +
                           " boundaries need " + std::to_string(options.boundaries.size() + 1) +
                           " batch sizes, got " + std::to_string(options.batch_sizes.size()));
  }
  if (!std::is_sorted(options.boundaries.begin(), options.boundaries.end())) {
    return InvalidArgument("bucket_by_length: boundaries must be increasing");
  }
  for (size_t s : options.batch_sizes) {
    if (s == 0) return InvalidArgument("bucket_by_length: batch sizes must be >= 1");
  }
  SLUICE_ASSIGN_OR_RETURN(size_t length_index, input->schema().Index(options.length_feature));
  Schema schema;
  SLUICE_ASSIGN_OR_RETURN(PaddingPlan plan,
                          PlanPadding(input->schema(), options.padding, -1, &schema));
  return NodePtr(std::make_shared<BucketNode>(std::move(input), std::move(schema), options,
                                              length_index, std::move(plan)));
}

}  // namespace sluice::pipeline

// Stacking elements into batches: one contiguous buffer per feature (batch), padded to the
// longest element (padded_batch, bucket_by_length) with an optional mask per padded feature.
#pragma once

#include <string>
#include <vector>

#include "context.h"
#include "sluice/pipeline/batch.h"
#include "sluice/pipeline/element.h"

namespace sluice::pipeline {

// Describes what padded stacking produces for an input schema: which features are padded,
// and where their masks go.
struct PaddingPlan {
  std::vector<bool> padded;       // per input feature: pad (rank >= 1) or stack as is
  std::vector<int> mask_index;    // per input feature: output tensor of its mask, or -1
  std::vector<double> pad_value;  // per input feature
  std::vector<int64_t> length;    // per input feature: fixed length of dim 0, or -1
  size_t multiple = 1;
  bool left = false;  // dim 0 padded before the data
};

// The plan and the output schema of padded stacking; `batch_dim` is the batch dimension of
// the schema (-1 when the last batch may be smaller).
Result<PaddingPlan> PlanPadding(const Schema& input, const PaddingOptions& options,
                                int64_t batch_dim, Schema* output);
// The output schema of plain stacking.
Schema BatchSchema(const Schema& input, int64_t batch_dim);

// Stacks elems[0, n) into `out` (its tensors reused when possible); id and mark are the
// last element's. Errors (InvalidArgument) name the feature and the records that disagree.
class SlotPlanner;
struct StackContext {
  BufferPool* pool = nullptr;
  // Map into slot: the feature it covers is taken in place when its elements sit in their
  // slots (SlotPlanner::Adopt), else copied. Must see every batch, in order. Default: none.
  SlotPlanner* slots = nullptr;
  const Schema* schema = nullptr;        // input schema (feature names in errors)
  const PipelineContext* ctx = nullptr;  // names records in errors
  std::string stage;                     // "batch", "bucket_by_length"
};
Status StackBatch(const StackContext& sc, const std::vector<Element>& elems, size_t n,
                  Element* out);

// A batch of scalar byte strings (the read stage's records) stacked from runs of elements as
// they arrive (StageIterator::NextSpan), not gathered one by one first: the batch stage's
// path straight over the read stage. Same output as StackBatch over the same elements.
class StringRunStacker {
 public:
  void Clear() {
    values_.clear();
    ends_.clear();
  }
  size_t size() const { return ends_.size(); }
  // Appends the run's elements: its packed records, or each element's one scalar string
  // tensor (the batch stage takes this path only over an input of that schema).
  void Add(const ElementRun& run);
  // The batch of what was added (at least one element) into *out; id and mark are the last
  // element's.
  void Finish(const StackContext& sc, Element* out);

 private:
  std::string values_;          // the strings, end to end
  std::vector<uint64_t> ends_;  // where each ends in values_
  RecordId last_id_;
  Mark last_mark_;
};
Status StackPadded(const StackContext& sc, const PaddingPlan& plan,
                   const std::vector<Element>& elems, size_t n, Element* out);

}  // namespace sluice::pipeline

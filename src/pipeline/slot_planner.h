// SlotPlanner: lets a map write one feature of each element straight into its slot of the
// batch buffer, so that batch stacks that feature without copying it (docs/pipeline.md,
// "Map into slot"). Shared by a batch iterator and the map iterator(s) below it.
//
// The difficulty is that a map runs ahead of batch, in parallel, and does not know where an
// element will land: every element dropped between the map's input and the batch (a bad image
// with on_error = skip, a filter, a skip stage) moves the later ones one slot down. So the map
// places each element at a *tentative* stream position t = (its index in the map's input) -
// (the lag batch has observed so far), and batch checks where each element really is:
//
// * Safety: drops only move elements down, so an element's final position f satisfies
//   t >= f (the lag observed so far is at most the drops before it). Batch assembles in
//   increasing f, so no element is ever placed into a batch already handed out, and no slot
//   is written by the map after batch used it. Claims are strictly increasing, so two
//   elements never share a slot; an element whose t is not above the last claim (right after
//   the lag grew) gets no slot and is written into its own tensor.
// * Cost: a batch whose elements all sit at slots 0..n-1 of one buffer is that buffer
//   (no copy). Otherwise batch copies, as without slots. After a drop, the elements already
//   in flight are one slot off: a batch or two are copied, then the claims are back in step.
//
// Only order-keeping, drop-only stages may sit between the map and batch (prefetch, repeat,
// take, skip, filter): they keep t >= f.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "sluice/pipeline/element.h"

namespace sluice::pipeline {

class SlotPlanner {
 public:
  // Slots of `feature` (dense, fixed `slot_shape`) in batches of `batch_size`.
  SlotPlanner(size_t feature, size_t batch_size, DType dtype, const Shape& slot_shape,
              BufferPool* pool);

  size_t feature() const { return feature_; }

  // Map side, called in the map's input order: the tentative position of the next input
  // element, or -1 when it gets no slot.
  int64_t Claim();
  // Map side, any thread: a view of the slot at tentative position `t` (from Claim), or an
  // empty tensor when that batch is already assembled (the element then writes its own).
  Tensor View(int64_t t);

  // Batch side: the next batch's elements elems[0, n). Makes `out` the batch of the slot
  // feature without a copy and returns true when they sit at slots 0..n-1 of one buffer;
  // false otherwise (the caller copies). Either way, learns the lag and retires the batch.
  bool Adopt(const std::vector<Element>& elems, size_t n, Tensor* out);

 private:
  struct OpenBatch {
    BufferRef buffer;
    std::vector<uint64_t> claim_lag;  // per slot: the lag its claim was made with
  };
  // Tentative position of a tensor that views one of the open buffers, or -1.
  int64_t PositionOfLocked(const Tensor& t) const;
  void LearnLagLocked(const std::vector<Element>& elems, size_t n);
  // A buffer for a new batch: a handed-out one the consumer has released, else the pool's.
  BufferRef NewBufferLocked();

  const size_t feature_;
  const uint64_t batch_size_;
  const DType dtype_;
  const Shape slot_shape_;
  const uint64_t slot_bytes_;
  BufferPool* const pool_;

  std::mutex mu_;
  uint64_t pulled_ = 0;                 // guarded by mu_: elements the map has pulled
  uint64_t lag_ = 0;                    // guarded by mu_: most drops observed before an element
  int64_t last_claim_ = -1;             // guarded by mu_
  uint64_t assembled_ = 0;              // guarded by mu_: elements batch has assembled
  std::map<uint64_t, OpenBatch> open_;  // guarded by mu_: by batch index
  // Buffers of the last batches handed out, reused once the consumer lets go of them: what
  // Tensor's in-place reuse does for a copied batch. Batch buffers exceed the pool's
  // retention, and a fresh one costs a page fault per 4 KiB (~15% of a 224x224 decode).
  static constexpr size_t kSpareBuffers = 4;
  std::vector<BufferRef> spare_;  // guarded by mu_
};

}  // namespace sluice::pipeline

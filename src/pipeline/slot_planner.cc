#include "slot_planner.h"

#include <algorithm>

namespace sluice::pipeline {

SlotPlanner::SlotPlanner(size_t feature, size_t batch_size, DType dtype, const Shape& slot_shape,
                         BufferPool* pool)
    : feature_(feature),
      batch_size_(batch_size),
      dtype_(dtype),
      slot_shape_(slot_shape),
      slot_bytes_(static_cast<uint64_t>(slot_shape.num_elements()) * DTypeSize(dtype)),
      pool_(pool) {}

int64_t SlotPlanner::Claim() {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t index = pulled_++;
  if (index < lag_) return -1;
  int64_t t = static_cast<int64_t>(index - lag_);
  if (t <= last_claim_ || static_cast<uint64_t>(t) < assembled_) return -1;
  last_claim_ = t;
  OpenBatch& b = open_[static_cast<uint64_t>(t) / batch_size_];
  if (!b.buffer) {
    b.buffer = NewBufferLocked();
    b.claim_lag.assign(batch_size_, 0);
  }
  b.claim_lag[static_cast<uint64_t>(t) % batch_size_] = lag_;
  return t;
}

BufferRef SlotPlanner::NewBufferLocked() {
  for (BufferRef& b : spare_) {
    if (b.unique()) {
      BufferRef reused = std::move(b);
      std::swap(b, spare_.back());
      spare_.pop_back();
      return reused;
    }
  }
  return pool_->Allocate(batch_size_ * slot_bytes_);
}

Tensor SlotPlanner::View(int64_t t) {
  Tensor view;
  if (t < 0) return view;
  std::lock_guard<std::mutex> l(mu_);
  auto it = open_.find(static_cast<uint64_t>(t) / batch_size_);
  if (it == open_.end()) return view;
  view.ViewDense(dtype_, slot_shape_, it->second.buffer,
                 static_cast<uint64_t>(t) % batch_size_ * slot_bytes_);
  return view;
}

int64_t SlotPlanner::PositionOfLocked(const Tensor& t) const {
  if (!t.buffer() || t.dtype() != dtype_ || t.shape() != slot_shape_) return -1;
  for (const auto& [index, batch] : open_) {
    if (t.buffer().get() == batch.buffer.get()) {
      return static_cast<int64_t>(index * batch_size_ + t.view_offset() / slot_bytes_);
    }
  }
  return -1;
}

// An element claimed at t with lag L that batch places at f had L + (t - f) drops before it.
// Drops never decrease along the stream, so the largest such count is a safe lag for later
// claims (it never exceeds the drops before them).
void SlotPlanner::LearnLagLocked(const std::vector<Element>& elems, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    int64_t t = PositionOfLocked(elems[i].tensors[feature_]);
    uint64_t f = assembled_ + i;
    if (t < 0 || static_cast<uint64_t>(t) < f) continue;
    const OpenBatch& b = open_.at(static_cast<uint64_t>(t) / batch_size_);
    lag_ = std::max(lag_, b.claim_lag[static_cast<uint64_t>(t) % batch_size_] + (t - f));
  }
}

bool SlotPlanner::Adopt(const std::vector<Element>& elems, size_t n, Tensor* out) {
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t index = assembled_ / batch_size_;
  LearnLagLocked(elems, n);
  bool in_place = false;
  auto it = open_.find(index);
  if (it != open_.end()) {
    in_place = true;
    for (size_t i = 0; i < n && in_place; ++i) {
      const Tensor& t = elems[i].tensors[feature_];
      in_place = t.buffer().get() == it->second.buffer.get() &&
                 t.view_offset() == i * slot_bytes_ && t.dtype() == dtype_ &&
                 t.shape() == slot_shape_;
    }
  }
  Shape shape = slot_shape_;
  in_place = in_place && shape.PushFront(static_cast<int64_t>(n));
  if (in_place) out->ViewDense(dtype_, shape, it->second.buffer, 0);
  assembled_ += n;
  // Nothing will be written into this batch's buffer any more (t >= f for every element not
  // yet assembled, so their slots lie in later batches).
  for (auto done = open_.begin(); done != open_.upper_bound(index); done = open_.erase(done)) {
    if (spare_.size() == kSpareBuffers) spare_.erase(spare_.begin());
    spare_.push_back(std::move(done->second.buffer));
  }
  return in_place;
}

}  // namespace sluice::pipeline

// What flows through a pipeline: elements made of positional tensors whose names live in
// the dataset's Schema, plus the identity of the record they came from and their place in
// the stream (the Mark that Save() turns into state).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/pipeline/tensor.h"

namespace sluice::pipeline {

// One named feature of a dataset's elements. In `shape`, -1 marks a dimension that varies.
struct FeatureInfo {
  std::string name;
  DType dtype = DType::kUInt8;
  Shape shape;
};

// The names, dtypes and shapes of a dataset's element tensors, in tensor order. Elements
// carry tensors only; names are looked up here once, not per element.
class Schema {
 public:
  Schema() = default;
  explicit Schema(std::vector<FeatureInfo> features) : features_(std::move(features)) {}

  size_t size() const { return features_.size(); }
  const FeatureInfo& operator[](size_t i) const { return features_[i]; }
  const std::vector<FeatureInfo>& features() const { return features_; }
  // Position of the feature called `name`, or -1.
  int Find(std::string_view name) const;
  Result<size_t> Index(std::string_view name) const;  // NotFound naming the known features
  void Add(FeatureInfo f) { features_.push_back(std::move(f)); }
  std::string ToString() const;  // "{image: uint8[-1, -1, 3], label: int64[]}"

 private:
  std::vector<FeatureInfo> features_;
};

// Which record an element came from. For a batch: its last element's record.
struct RecordId {
  uint64_t epoch = 0;
  uint64_t position = 0;  // position in the epoch's global order: seeds per-sample randomness
  uint32_t shard = 0;     // shard number in the snapshot
  uint64_t index = 0;     // record index inside the shard
};

inline constexpr size_t kMaxStageCounters = 6;

// Where an element sits in the stream: enough for every stage to save its state "as of the
// moment this element was delivered", although asynchronous stages upstream have run ahead.
// A batch carries the mark of its last element.
struct Mark {
  bool valid = false;   // false: nothing delivered yet (state = the start)
  uint64_t epoch = 0;   // epoch of the source that produced the latest input
  uint64_t cursor = 0;  // rank samples the source had consumed once this element was complete
  // Counters of counting stages (take, skip, buffer shuffle, bucket_by_length), one slot per
  // stage, assigned when the iterator is built.
  std::array<uint64_t, kMaxStageCounters> counters{};
};

// A pipeline element. Stages reuse Element objects (and their tensors' buffers) across
// Next() calls, which is what keeps steady state free of per-sample allocation.
struct Element {
  std::vector<Tensor> tensors;
  RecordId id;
  Mark mark;

  // Bytes held by the tensors (what memory accounting and stats count).
  uint64_t bytes() const {
    uint64_t n = 0;
    for (const Tensor& t : tensors) n += t.used_bytes();
    return n;
  }
};

// A run of elements a stage hands out in place (StageIterator::NextSpan): [first, first +
// count). When the stage keeps the run's records packed (`bytes` set: the read stage, for a
// consumer that takes runs only), element i's record is bytes[i == 0 ? begin : ends[i - 1],
// ends[i]) and its tensors are empty; otherwise each element holds its tensors.
struct ElementRun {
  Element* first = nullptr;
  size_t count = 0;
  const char* bytes = nullptr;
  const uint64_t* ends = nullptr;
  uint64_t begin = 0;
};

}  // namespace sluice::pipeline

// map(fn) and filter(pred): user functions over elements, run in parallel on the pipeline's
// pool. Output order is the input order unless `ordered = false`.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "sluice/base/random.h"
#include "sluice/base/status.h"
#include "sluice/pipeline/element.h"
#include "sluice/pipeline/pipeline_options.h"

namespace sluice::pipeline {

// What a map function knows besides the element.
class MapContext {
 public:
  MapContext(const RecordId* record, uint64_t seed, BufferPool* pool, const Schema* input,
             const Schema* output, const std::atomic<bool>* stopping, Tensor* slot = nullptr)
      : record_(record),
        seed_(seed),
        pool_(pool),
        input_(input),
        output_(output),
        stopping_(stopping),
        slot_(slot) {}

  const RecordId& record() const { return *record_; }
  // Random numbers for this sample (base/random.h): a pure function of (seed, epoch, global
  // position), so augmentation is identical for any thread count, world size or restore point.
  // The same generator drives the vision ops (vision::ImageTransform::Apply).
  SampleRng rng() const { return SampleRng::ForSample(seed_, record_->epoch, record_->position); }
  // Where to allocate tensor buffers (Tensor::Resize*).
  BufferPool* pool() const { return pool_; }
  const Schema& input_schema() const { return *input_; }
  const Schema& output_schema() const { return *output_; }
  // Long-running functions may poll this and return early: the iterator is being destroyed.
  bool cancelled() const { return stopping_ && stopping_->load(std::memory_order_relaxed); }
  // The same, and on the consumer's thread (which runs stages when it helps) its wait check
  // (pipeline/wait_check.h: Python's signal handlers, at most every 50 ms): a non-OK status
  // (Cancelled) is what the function should return. What a function that runs for seconds
  // (decode_image on an 81-megapixel photo) polls to honour Ctrl-C within ~50 ms.
  Status CheckInterrupt() const;
  // For a map with MapOptions::slot_feature: when the pipeline placed this element's value of
  // that feature in a batch buffer, moves that place (a dense tensor of the feature's dtype and
  // shape, viewing the batch buffer) into *t and returns true; the function then writes the
  // values into it. false: no slot, the function sizes *t itself (Tensor::ResizeDense).
  bool TakeSlot(Tensor* t) const {
    if (slot_ == nullptr || !slot_->buffer()) return false;
    *t = std::move(*slot_);
    slot_->Reset();
    return true;
  }

 private:
  const RecordId* record_;
  uint64_t seed_;
  BufferPool* pool_;
  const Schema* input_;
  const Schema* output_;
  const std::atomic<bool>* stopping_;
  Tensor* slot_;
};

// Transforms an element in place (tensors may be resized, added or removed to match the
// output schema). Must be thread-safe: it runs on many threads at once.
using MapFn = std::function<Status(Element* element, const MapContext& ctx)>;
// Keeps an element when it returns true.
using FilterFn = std::function<Result<bool>(const Element& element, const MapContext& ctx)>;

inline constexpr int kAutotune = -1;

struct MapOptions {
  std::string name;  // Default: "" (stage "map"); "decode" names the stage "map:decode"
  // Concurrent map tasks. Default: kAutotune (starts at 1). 0 = run on the consumer's thread.
  int parallelism = kAutotune;
  // Deliver in input order. false trades determinism (and exact Save) for throughput.
  bool ordered = true;                  // Default: true
  std::optional<Schema> output_schema;  // Default: the input schema
  std::optional<ErrorPolicy> on_error;  // Default: PipelineOptions::on_error
  size_t chunk_elements = 32;           // Default: 32 elements per task
  // Map into slot (docs/pipeline.md): the output feature (dense, fixed shape in output_schema)
  // that the function writes through MapContext::TakeSlot. A batch above the map (directly,
  // or across prefetch / repeat / take / skip / filter) then has it written straight into
  // the batch buffer instead of copying it there. Default: "" (none).
  std::string slot_feature;
};

struct FilterOptions {
  std::string name;                     // Default: "" (stage "filter")
  std::optional<ErrorPolicy> on_error;  // Default: PipelineOptions::on_error
};

}  // namespace sluice::pipeline

// prefetch(n): computes up to n elements ahead of the consumer on the pool. Elements move
// in chunks of up to n/4 (one element for small n, e.g. batches), cut short after 100 us so
// an expensive element never waits for the next one: the hand-off cost per element stays
// small for cheap elements while n still bounds what is held.
#include "nodes.h"
#include "parallel_runner.h"

namespace sluice::pipeline {
namespace {

constexpr uint64_t kRunNs = 100'000;
constexpr size_t kMaxDepth = 64;

class PrefetchNode final : public DatasetNode {
 public:
  PrefetchNode(NodePtr input, int64_t depth) : DatasetNode(input, input->schema()), depth_(depth) {}
  std::string_view kind() const override { return "prefetch"; }
  int64_t depth() const { return depth_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

 private:
  int64_t depth_;  // kAutotune or > 0
};

class PrefetchIterator final : public StageIterator, private ChunkWork {
 public:
  PrefetchIterator(PipelineContext* ctx, const PrefetchNode* node,
                   std::unique_ptr<StageIterator> input)
      : StageIterator(ctx, node, std::move(input)) {
    size_t depth = node->depth() == kAutotune ? 2 : static_cast<size_t>(node->depth());
    RunnerOptions ro;
    ro.chunk_elements = std::max<size_t>(1, depth / 4);
    ro.parallelism = 1;  // pulling is the work: more tasks would only queue on the input
    ro.window = (depth + ro.chunk_elements - 1) / ro.chunk_elements;
    ro.kind = Tunable::Kind::kPrefetchDepth;
    ro.tunable = ctx->options().autotune && node->depth() == kAutotune;
    ro.max_parallelism = 1;
    ro.max_window = std::max(ro.window, kMaxDepth);
    // On one CPU a pool task that pulls whole chunks is the cheapest schedule: the stages
    // above it then run in its thread instead of switching with the consumer per chunk.
    ro.consumer_first = ctx->cpus() > 1;
    runner_ = std::make_unique<ParallelRunner>(ctx, counters_, static_cast<ChunkWork*>(this), ro);
  }
  ~PrefetchIterator() override { runner_->Shutdown(); }

  Result<bool> Next(Element* out) override { return runner_->Next(out); }
  void Stop() override {
    StageIterator::Stop();
    runner_->Stop();
  }
  Status Refetch(const RecordId& id, Element* out) override { return input_->Refetch(id, out); }

 private:
  void Pull(Chunk* c, size_t max_elements) override {
    PullFromInput(input_.get(), *runner_, c, max_elements, max_elements > 1 ? NowNs() + kRunNs : 0);
  }
  void Work(Chunk*) override {}

  std::unique_ptr<ParallelRunner> runner_;
};

Result<std::unique_ptr<StageIterator>> PrefetchNode::MakeIterator(PipelineContext* ctx,
                                                                  const IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  return std::unique_ptr<StageIterator>(
      std::make_unique<PrefetchIterator>(ctx, this, std::move(input)));
}

}  // namespace

NodePtr MakePrefetchNode(NodePtr input, int64_t buffer_elements) {
  if (buffer_elements == 0) return input;  // prefetch(0): nothing ahead
  if (buffer_elements < 0) buffer_elements = kAutotune;
  return std::make_shared<PrefetchNode>(std::move(input), buffer_elements);
}

}  // namespace sluice::pipeline

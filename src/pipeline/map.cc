// map(fn) and filter(pred). Both run user code over chunks of elements on the pool; a filter
// is a map that may drop the element. Order is kept by the runner's sequence numbers unless
// the user asked for completion order.
#include "nodes.h"
#include "parallel_runner.h"

namespace sluice::pipeline {
namespace {

class MapNode final : public DatasetNode {
 public:
  MapNode(NodePtr input, Schema schema, MapFn fn, FilterFn predicate, MapOptions options,
          std::string kind)
      : DatasetNode(std::move(input), std::move(schema)),
        fn_(std::move(fn)),
        predicate_(std::move(predicate)),
        options_(std::move(options)),
        kind_(std::move(kind)) {}

  std::string_view kind() const override { return kind_; }
  std::string name() const override {
    std::string n(kind());
    return options_.name.empty() ? n : n + ":" + options_.name;
  }
  Result<std::unique_ptr<StageIterator>> MakeIterator(PipelineContext* ctx,
                                                      const IteratorArgs& args) const override;

  const MapFn& fn() const { return fn_; }
  const FilterFn& predicate() const { return predicate_; }
  const MapOptions& options() const { return options_; }

 private:
  MapFn fn_;
  FilterFn predicate_;  // set for filter
  MapOptions options_;
  std::string kind_;  // "map", "filter", "parse_example"
};

class MapIterator final : public StageIterator, private ChunkWork {
 public:
  MapIterator(PipelineContext* ctx, const MapNode* node, std::unique_ptr<StageIterator> input)
      : StageIterator(ctx, node, std::move(input)),
        map_(node),
        policy_(ctx->PolicyOr(node->options().on_error)) {
    const MapOptions& o = node->options();
    size_t threads = ctx->pool()->size();
    RunnerOptions ro;
    ro.chunk_elements = std::max<size_t>(1, o.chunk_elements);
    ro.parallelism = o.parallelism == kAutotune ? 1 : static_cast<size_t>(o.parallelism);
    ro.window = std::max<size_t>(2, 2 * ro.parallelism);
    ro.ordered = o.ordered;
    ro.kind = Tunable::Kind::kMapParallelism;
    ro.tunable = ctx->options().autotune && o.parallelism == kAutotune;
    ro.max_parallelism = std::max(ro.parallelism, threads);
    ro.max_window = 2 * ro.max_parallelism;
    runner_ = std::make_unique<ParallelRunner>(ctx, counters_, static_cast<ChunkWork*>(this), ro);
  }
  ~MapIterator() override { runner_->Shutdown(); }

  Result<bool> Next(Element* out) override { return runner_->Next(out); }
  void Stop() override {
    StageIterator::Stop();
    runner_->Stop();
  }
  Status Save(const Mark& delivered, StateWriter* w) const override {
    if (!map_->options().ordered) {
      return FailedPrecondition(node_->name() +
                                " runs with ordered = false: its output order is not "
                                "reproducible, so no exact state can be saved");
    }
    return input_->Save(delivered, w);
  }
  Status Refetch(const RecordId& id, Element* out) override {
    SLUICE_RETURN_IF_ERROR(input_->Refetch(id, out));
    Result<bool> keep = Apply(*out, runner_->stopping_flag());
    if (!keep.ok()) return keep.status().WithContext(node_->name());
    if (!*keep) return Internal(node_->name() + " rejected a record it had accepted before");
    return Status::OK();
  }

 private:
  Result<bool> Apply(Element& e, const std::atomic<bool>* stopping) const {
    MapContext mc(&e.id, ctx_->seed(), ctx_->buffers(), &map_->input()->schema(), &map_->schema(),
                  stopping);
    if (map_->predicate()) return map_->predicate()(e, mc);
    SLUICE_RETURN_IF_ERROR(map_->fn()(&e, mc));
    return true;
  }
  void Pull(Chunk* c, size_t max_elements) override;
  void Work(Chunk* c) override {
    TransformChunk(c, *runner_, ctx_, counters_, policy_,
                   [&](Element& e) { return Apply(e, runner_->stopping_flag()); });
  }

  const MapNode* map_;
  const ErrorPolicy policy_;
  std::unique_ptr<ParallelRunner> runner_;
};

void MapIterator::Pull(Chunk* c, size_t max_elements) {
  PullFromInput(input_.get(), *runner_, c, max_elements, 0);
}

Result<std::unique_ptr<StageIterator>> MapNode::MakeIterator(PipelineContext* ctx,
                                                             const IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  return std::unique_ptr<StageIterator>(std::make_unique<MapIterator>(ctx, this, std::move(input)));
}

}  // namespace

Result<NodePtr> MakeMapNode(NodePtr input, MapFn fn, const MapOptions& options, std::string kind) {
  if (!fn) return InvalidArgument("map: no function");
  Schema schema = options.output_schema.value_or(input->schema());
  return NodePtr(std::make_shared<MapNode>(std::move(input), std::move(schema), std::move(fn),
                                           nullptr, options, std::move(kind)));
}

Result<NodePtr> MakeFilterNode(NodePtr input, FilterFn predicate, const FilterOptions& options) {
  if (!predicate) return InvalidArgument("filter: no predicate");
  MapOptions mo;
  mo.name = options.name;
  mo.on_error = options.on_error;
  mo.parallelism = 0;  // predicates are cheap: run on the consumer's thread, in chunks
  Schema schema = input->schema();
  return NodePtr(std::make_shared<MapNode>(std::move(input), std::move(schema), nullptr,
                                           std::move(predicate), mo, "filter"));
}

}  // namespace sluice::pipeline

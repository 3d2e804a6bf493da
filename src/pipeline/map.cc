// map(fn) and filter(pred). Both run user code over chunks of elements on the pool; a filter
// is a map that may drop the element. Order is kept by the runner's sequence numbers unless
// the user asked for completion order.
#include "nodes.h"
#include "parallel_runner.h"
#include "slot_planner.h"
#include "sluice/pipeline/wait_check.h"

namespace sluice::pipeline {

Status MapContext::CheckInterrupt() const {
  if (cancelled()) return Cancelled("iterator cancelled");
  return CheckWaitInterrupt();
}
namespace {

class MapNode final : public DatasetNode {
 public:
  MapNode(NodePtr input, Schema schema, MapFn fn, FilterFn predicate, MapOptions options,
          std::string kind, int slot_feature = -1)
      : DatasetNode(std::move(input), std::move(schema)),
        fn_(std::move(fn)),
        predicate_(std::move(predicate)),
        options_(std::move(options)),
        kind_(std::move(kind)),
        slot_feature_(slot_feature) {}

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
  // Output feature written through MapContext::TakeSlot, or -1.
  int slot_feature() const { return slot_feature_; }

 private:
  MapFn fn_;
  FilterFn predicate_;  // set for filter
  MapOptions options_;
  std::string kind_;  // "map", "filter", "parse_example"
  int slot_feature_;
};

class MapIterator final : public StageIterator, private ChunkWork {
 public:
  MapIterator(PipelineContext* ctx, const MapNode* node, std::unique_ptr<StageIterator> input)
      : StageIterator(ctx, node, std::move(input)),
        map_(node),
        policy_(ctx->PolicyOr(node->options().on_error)),
        planner_(node->slot_feature() >= 0 ? ctx->SlotPlannerFor(node) : nullptr) {
    const MapOptions& o = node->options();
    size_t threads = ctx->pool()->size();
    RunnerOptions ro;
    ro.chunk_elements = std::max<size_t>(1, o.chunk_elements);
    ro.parallelism = o.parallelism == kAutotune ? 1 : static_cast<size_t>(o.parallelism);
    // Four chunks per task: the consumer (batch) takes chunks in order, and with two it
    // waited for the one in flight while the window was full; with four the tasks keep going
    // (decode_image on 2 CPUs: CPUs busy 1.89 -> 1.98 of 2, 7% more images/s).
    ro.chunks_per_task = 4;
    ro.window = std::max<size_t>(2, ro.chunks_per_task * ro.parallelism);
    ro.ordered = o.ordered;
    ro.kind = Tunable::Kind::kMapParallelism;
    ro.tunable = ctx->options().autotune && o.parallelism == kAutotune;
    ro.max_parallelism = std::max(ro.parallelism, threads);
    ro.max_window = ro.chunks_per_task * ro.max_parallelism;
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
    Result<bool> keep = Apply(*out, runner_->stopping_flag(), nullptr);
    if (!keep.ok()) return keep.status().WithContext(node_->name());
    if (!*keep) return Internal(node_->name() + " rejected a record it had accepted before");
    return Status::OK();
  }

 private:
  Result<bool> Apply(Element& e, const std::atomic<bool>* stopping, Tensor* slot) const {
    MapContext mc(&e.id, ctx_->seed(), ctx_->buffers(), &map_->input()->schema(), &map_->schema(),
                  stopping, slot);
    if (map_->predicate()) return map_->predicate()(e, mc);
    SLUICE_RETURN_IF_ERROR(map_->fn()(&e, mc));
    return true;
  }
  void Pull(Chunk* c, size_t max_elements) override;
  void Work(Chunk* c) override;

  const MapNode* map_;
  const ErrorPolicy policy_;
  const std::shared_ptr<SlotPlanner> planner_;  // null unless a batch above takes slots
  std::unique_ptr<ParallelRunner> runner_;
};

void MapIterator::Pull(Chunk* c, size_t max_elements) {
  PullFromInput(input_.get(), *runner_, c, max_elements, 0);
  if (!planner_) return;
  c->slots.resize(c->size);
  for (size_t i = 0; i < c->size; ++i) c->slots[i] = planner_->Claim();
}

void MapIterator::Work(Chunk* c) {
  size_t pulled = 0;  // the element's index among the pulled ones (drops shift elems)
  TransformChunk(c, *runner_, ctx_, counters_, policy_, [&](Element& e) -> Result<bool> {
    if (!planner_) return Apply(e, runner_->stopping_flag(), nullptr);
    Tensor slot = planner_->View(c->slots[pulled++]);
    Result<bool> keep = Apply(e, runner_->stopping_flag(), &slot);
    // A dropped element lets go of its slot now rather than when its Element is reused.
    size_t f = planner_->feature();
    if ((!keep.ok() || !*keep) && f < e.tensors.size()) e.tensors[f].Reset();
    return keep;
  });
}

Result<std::unique_ptr<StageIterator>> MapNode::MakeIterator(PipelineContext* ctx,
                                                             const IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  return std::unique_ptr<StageIterator>(std::make_unique<MapIterator>(ctx, this, std::move(input)));
}

}  // namespace

namespace {

// The index of MapOptions::slot_feature in `schema` (-1 when unset); it must be a dense
// feature of fixed shape.
Result<int> SlotFeature(const Schema& schema, const MapOptions& options) {
  if (options.slot_feature.empty()) return -1;
  SLUICE_ASSIGN_OR_RETURN(size_t f, schema.Index(options.slot_feature));
  const FeatureInfo& info = schema[f];
  if (info.dtype == DType::kString || !info.shape.fully_defined() ||
      info.shape.rank() >= kMaxRank) {
    return InvalidArgument("map: slot_feature '" + info.name + "' is " +
                           std::string(DTypeName(info.dtype)) + info.shape.ToString() +
                           "; slots need a dense feature of fixed shape");
  }
  return static_cast<int>(f);
}

}  // namespace

Result<NodePtr> MakeMapNode(NodePtr input, MapFn fn, const MapOptions& options, std::string kind) {
  if (!fn) return InvalidArgument("map: no function");
  Schema schema = options.output_schema.value_or(input->schema());
  SLUICE_ASSIGN_OR_RETURN(int slot_feature, SlotFeature(schema, options));
  return NodePtr(std::make_shared<MapNode>(std::move(input), std::move(schema), std::move(fn),
                                           nullptr, options, std::move(kind), slot_feature));
}

const DatasetNode* FindSlotMap(const DatasetNode* node, size_t* feature) {
  for (; node != nullptr; node = node->input()) {
    auto* map = dynamic_cast<const MapNode*>(node);
    if (map != nullptr && map->slot_feature() >= 0 && map->options().ordered) {
      *feature = static_cast<size_t>(map->slot_feature());
      return map;
    }
    std::string_view k = node->kind();
    if (k != "prefetch" && k != "repeat" && k != "take" && k != "skip" && k != "filter") {
      return nullptr;
    }
  }
  return nullptr;
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

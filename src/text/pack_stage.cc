// pack: a stateful pipeline stage over SequencePacker (the one packing algorithm). Each
// output element is one sequence of seq_len tokens with segment and position ids.
//
// State: after each emitted sequence the stage snapshots the packer's ResumePoint as record
// positions: the (epoch, position) of every document from the one the next sequence starts
// in up to the last one pulled, plus the token offset into the first. It keeps snapshots of
// sequences not yet delivered; Restore re-reads those documents through the input (Refetch)
// and re-adds them, never storing token bytes. The pipeline-internal stage interface
// (src/pipeline/stage.h) is what stages above the pipeline layer implement.
#include <cstring>
#include <deque>

#include "../pipeline/emission_history.h"
#include "../pipeline/stage.h"
#include "sluice/text/stages.h"

namespace sluice::text {
namespace {

using pipeline::DatasetNode;
using pipeline::DType;
using pipeline::Element;
using pipeline::Mark;
using pipeline::PipelineContext;
using pipeline::RecordId;
using pipeline::Schema;
using pipeline::Shape;
using pipeline::StageIterator;
using pipeline::StateReader;
using pipeline::StateWriter;
using pipeline::Tensor;
using NodePtr = std::shared_ptr<const DatasetNode>;

class PackNode final : public DatasetNode {
 public:
  PackNode(NodePtr input, Schema schema, PackOptions options, size_t feature)
      : DatasetNode(std::move(input), std::move(schema)),
        options_(std::move(options)),
        feature_(feature) {}
  std::string_view kind() const override { return "pack"; }
  const PackOptions& options() const { return options_; }
  size_t feature() const { return feature_; }
  Result<std::unique_ptr<StageIterator>> MakeIterator(
      PipelineContext* ctx, const pipeline::IteratorArgs& args) const override;

 private:
  PackOptions options_;
  size_t feature_;
};

class PackIterator final : public StageIterator {
 public:
  PackIterator(PipelineContext* ctx, const PackNode* node, std::unique_ptr<StageIterator> input,
               size_t slot, SequencePacker packer)
      : StageIterator(ctx, node, std::move(input)),
        pack_(node),
        history_(ctx, slot),
        packer_(std::move(packer)) {}

  Result<bool> Next(Element* out) override;
  Status Save(const Mark& delivered, StateWriter* w) const override;
  Status Restore(const StateReader& r) override;

 private:
  // Adds document `doc` (its `feature` tensor) to the packer, from token `first`.
  Status AddDocument(const Element& doc, size_t first);
  void Emit(Element* out);

  const PackNode* pack_;
  // After each emission, where the packer resumes: the token offset into the first document,
  // then (epoch, position) of each document from there on.
  pipeline::EmissionHistory history_;
  SequencePacker packer_;
  PackedBatch taken_;
  Element staging_;
  // Documents from the packer's resume point on: their ids, and the packer's number of the
  // first (the packer numbers documents by Add calls from 0).
  std::deque<RecordId> docs_;
  uint64_t first_doc_ = 0;
  Mark last_in_;  // mark of the latest element pulled
  bool input_done_ = false;
};

Status PackIterator::AddDocument(const Element& doc, size_t first) {
  const Tensor& t = doc.tensors[pack_->feature()];
  size_t n = static_cast<size_t>(t.shape()[0]);
  Status s = t.dtype() == DType::kInt64
                 ? packer_.Add(std::span<const int64_t>(t.data<int64_t>(), n), first)
                 : packer_.Add(std::span<const int32_t>(t.data<int32_t>(), n), first);
  if (!s.ok()) return s.WithContext(node_->name() + ": " + ctx_->DescribeRecord(doc.id));
  docs_.push_back(doc.id);
  return Status::OK();
}

Result<bool> PackIterator::Next(Element* out) {
  while (packer_.ready() == 0) {
    if (stopped()) return StoppedError();
    if (input_done_) return false;
    SLUICE_ASSIGN_OR_RETURN(bool more, input_->Next(&staging_));
    if (!more) {
      input_done_ = true;
      packer_.Finish();
      continue;
    }
    last_in_ = staging_.mark;
    SLUICE_RETURN_IF_ERROR(AddDocument(staging_, 0));
  }
  Emit(out);
  counters_->Add(counters_->elements, 1);
  return true;
}

void PackIterator::Emit(Element* out) {
  packer_.Take(1, &taken_);
  const size_t len = taken_.seq_len;
  out->tensors.resize(3);
  const std::vector<int32_t>* columns[3] = {&taken_.tokens, &taken_.segment_ids,
                                            &taken_.position_ids};
  for (size_t i = 0; i < 3; ++i) {
    out->tensors[i].ResizeDense(DType::kInt32, Shape{static_cast<int64_t>(len)}, ctx_->buffers());
    std::memcpy(out->tensors[i].raw_data(), columns[i]->data(), len * sizeof(int32_t));
  }
  out->id = docs_.empty() ? RecordId() : docs_.back();
  // Forget documents before the resume point; snapshot the rest as record positions.
  auto [doc, offset] = packer_.ResumePoint();
  while (first_doc_ < doc && !docs_.empty()) {
    docs_.pop_front();
    ++first_doc_;
  }
  std::vector<uint64_t> resume{offset};
  for (const RecordId& id : docs_) resume.insert(resume.end(), {id.epoch, id.position});
  history_.Record(std::move(resume), last_in_, &out->mark);
}

Status PackIterator::Save(const Mark& delivered, StateWriter* w) const {
  SLUICE_RETURN_IF_ERROR(history_.Save(key_, node_->name(), delivered, w));
  return input_->Save(delivered, w);
}

Status PackIterator::Restore(const StateReader& r) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> resume,
                          history_.Restore(key_, node_->name(), r, &last_in_));
  if (!resume.empty() && resume.size() % 2 != 1) {
    return InvalidArgument("iterator state: malformed pack state");
  }
  SLUICE_RETURN_IF_ERROR(input_->Restore(r));
  for (size_t i = 1; i < resume.size(); i += 2) {
    SLUICE_RETURN_IF_ERROR(input_->Refetch(RecordId{resume[i], resume[i + 1], 0, 0}, &staging_));
    SLUICE_RETURN_IF_ERROR(AddDocument(staging_, i == 1 ? static_cast<size_t>(resume[0]) : 0));
  }
  return Status::OK();
}

Result<std::unique_ptr<StageIterator>> PackNode::MakeIterator(
    PipelineContext* ctx, const pipeline::IteratorArgs& args) const {
  SLUICE_ASSIGN_OR_RETURN(auto input, this->input()->MakeIterator(ctx, args));
  SLUICE_ASSIGN_OR_RETURN(size_t slot, ctx->CounterSlot(this));
  SLUICE_ASSIGN_OR_RETURN(SequencePacker packer, SequencePacker::Create(options_.packing));
  return std::unique_ptr<StageIterator>(
      std::make_unique<PackIterator>(ctx, this, std::move(input), slot, std::move(packer)));
}

Result<NodePtr> MakePackNode(NodePtr input, const PackOptions& options) {
  SLUICE_RETURN_IF_ERROR(SequencePacker::Create(options.packing).status());
  const Schema& in = input->schema();
  SLUICE_ASSIGN_OR_RETURN(size_t feature, in.Index(options.feature));
  const pipeline::FeatureInfo& f = in[feature];
  if ((f.dtype != DType::kInt32 && f.dtype != DType::kInt64) || f.shape.rank() != 1) {
    return InvalidArgument("pack: feature '" + options.feature +
                           "' must be int32 or int64 of rank 1, it is " +
                           std::string(pipeline::DTypeName(f.dtype)) + f.shape.ToString());
  }
  const int64_t len = static_cast<int64_t>(options.packing.seq_len);
  Schema schema({{"tokens", DType::kInt32, Shape{len}},
                 {"segment_ids", DType::kInt32, Shape{len}},
                 {"position_ids", DType::kInt32, Shape{len}}});
  return NodePtr(std::make_shared<PackNode>(std::move(input), std::move(schema), options, feature));
}

}  // namespace

pipeline::Dataset Pack(const pipeline::Dataset& input, const PackOptions& options) {
  return input.Append([&](NodePtr node) { return MakePackNode(std::move(node), options); });
}

}  // namespace sluice::text

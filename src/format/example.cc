// ExampleView, SequenceExampleView and ExampleParser: thin owners around the shared
// decoding walk in example_decode.h.
#include "sluice/format/example.h"

#include <algorithm>

#include "format/example_decode.h"
#include "format/proto_wire.h"

namespace sluice::format {

using internal::FindOrInsert;
using internal::RecycleNodes;

std::string_view FeatureTypeName(FeatureType type) {
  switch (type) {
    case FeatureType::kBytes:
      return "bytes";
    case FeatureType::kFloat:
      return "float";
    case FeatureType::kInt64:
      return "int64";
    case FeatureType::kNone:
      break;
  }
  return "none";
}

size_t FeatureView::size() const {
  switch (type) {
    case FeatureType::kBytes:
      return bytes.size();
    case FeatureType::kFloat:
      return floats.size();
    case FeatureType::kInt64:
      return int64s.size();
    case FeatureType::kNone:
      break;
  }
  return 0;
}

void ExampleView::Reset() { RecycleNodes(&features_, &spare_); }

Status ExampleView::Parse(ByteView serialized) {
  Reset();
  wire::WireReader r(serialized);
  bool ok = internal::DecodeExample(
      &r, [this](ByteView name) { return FindOrInsert(&features_, &spare_, name); });
  if (ok) return Status::OK();
  Reset();
  return r.status("tf.train.Example");
}

const FeatureView* ExampleView::Find(std::string_view name) const {
  auto it = features_.find(name);
  return it == features_.end() ? nullptr : &it->second;
}

void SequenceExampleView::Reset() {
  context_.Reset();
  RecycleNodes(&feature_lists_, &spare_);
}

Status SequenceExampleView::Parse(ByteView serialized) {
  Reset();
  wire::WireReader r(serialized);
  auto context_target = [this](ByteView name) {
    return FindOrInsert(&context_.features_, &context_.spare_, name);
  };
  auto list_target = [this](ByteView name) { return FindOrInsert(&feature_lists_, &spare_, name); };
  bool ok = wire::ForEachField(&r, [&](uint32_t field, wire::WireType type) {
    if (field != internal::kSequenceContext && field != internal::kSequenceFeatureLists) {
      return r.SkipField(field, type);
    }
    ByteView message;
    if (!r.ReadLengthDelimited(type, "wrong wire type for SequenceExample field", &message)) {
      return false;
    }
    return field == internal::kSequenceContext ? internal::DecodeMap(&r, message, context_target)
                                               : internal::DecodeMap(&r, message, list_target);
  });
  if (ok) return Status::OK();
  Reset();
  return r.status("tf.train.SequenceExample");
}

ExampleParser::ExampleParser(std::vector<std::string> wanted) : wanted_(std::move(wanted)) {
  std::vector<size_t> order(wanted_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [this](size_t a, size_t b) { return wanted_[a] < wanted_[b]; });
  for (size_t i : order) {
    if (!by_name_.empty() && wanted_[by_name_.back()] == wanted_[i]) {
      copies_.emplace_back(i, by_name_.back());
    } else {
      by_name_.push_back(i);
    }
  }
}

Status ExampleParser::Parse(ByteView serialized, std::vector<FeatureView>* out) const {
  out->resize(wanted_.size());
  for (FeatureView& f : *out) f.Clear();
  auto target = [this, out](ByteView name) -> FeatureView* {
    auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                               [this](size_t i, ByteView n) { return wanted_[i] < n; });
    if (it == by_name_.end() || wanted_[*it] != name) return nullptr;
    return &(*out)[*it];
  };
  wire::WireReader r(serialized);
  if (!internal::DecodeExample(&r, target)) return r.status("tf.train.Example");
  for (const auto& [slot, source] : copies_) (*out)[slot] = (*out)[source];
  return Status::OK();
}

}  // namespace sluice::format

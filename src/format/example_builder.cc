// ExampleBuilder / SequenceExampleBuilder: the encoder. Byte-exact with protobuf's
// deterministic serialization: map entries in key order, each entry writing its key and
// its value even when empty, packed numeric lists, empty packed lists omitted, every
// message length-prefixed with its exact size (computed first, so nothing is copied twice).
#include <bit>

#include "format/example_decode.h"
#include "format/proto_wire.h"
#include "sluice/format/example.h"

namespace sluice::format {
namespace {

using wire::PutLengthPrefix;
using wire::PutTag;
using wire::PutVarint;
using wire::VarintLength;
using wire::WireType;

// Bytes taken by a length-delimited field with a one-byte key and `payload` bytes.
size_t DelimitedSize(size_t payload) { return 1 + VarintLength(payload) + payload; }

size_t PackedInt64Size(const std::vector<int64_t>& values) {
  size_t n = 0;
  for (int64_t v : values) n += VarintLength(static_cast<uint64_t>(v));
  return n;
}

// Size of the list message (BytesList / FloatList / Int64List) inside a Feature.
template <typename Values>
size_t ListSize(const Values& v) {
  switch (v.type) {
    case FeatureType::kBytes: {
      size_t n = 0;
      for (const std::string& b : v.bytes) n += DelimitedSize(b.size());
      return n;
    }
    case FeatureType::kFloat:
      return v.floats.empty() ? 0 : DelimitedSize(4 * v.floats.size());
    case FeatureType::kInt64:
      return v.int64s.empty() ? 0 : DelimitedSize(PackedInt64Size(v.int64s));
    case FeatureType::kNone:
      break;
  }
  return 0;
}

uint32_t KindField(FeatureType type) {
  return type == FeatureType::kBytes   ? internal::kFeatureBytesList
         : type == FeatureType::kFloat ? internal::kFeatureFloatList
                                       : internal::kFeatureInt64List;
}

template <typename Values>
void PutList(std::string* out, const Values& v) {
  switch (v.type) {
    case FeatureType::kBytes:
      for (const std::string& b : v.bytes) wire::PutLengthDelimited(out, internal::kListValue, b);
      break;
    case FeatureType::kFloat:
      if (v.floats.empty()) break;
      PutLengthPrefix(out, internal::kListValue, 4 * v.floats.size());
      for (float f : v.floats) PutFixed32(out, std::bit_cast<uint32_t>(f));
      break;
    case FeatureType::kInt64:
      if (v.int64s.empty()) break;
      PutLengthPrefix(out, internal::kListValue, PackedInt64Size(v.int64s));
      for (int64_t i : v.int64s) PutVarint(out, static_cast<uint64_t>(i));
      break;
    case FeatureType::kNone:
      break;
  }
}

// Size of a map entry {key, value} whose value message has `value_size` bytes.
size_t EntrySize(std::string_view key, size_t value_size) {
  return DelimitedSize(key.size()) + DelimitedSize(value_size);
}

void PutEntryHeader(std::string* out, std::string_view key, size_t value_size) {
  PutLengthPrefix(out, internal::kMapField, EntrySize(key, value_size));
  wire::PutLengthDelimited(out, internal::kMapKey, key);
  PutLengthPrefix(out, internal::kMapValue, value_size);
}

// The fresh values of `name` in a builder's map: a name added again is replaced.
template <typename Map>
typename Map::mapped_type& Fresh(Map* map, std::string_view name, FeatureType type) {
  typename Map::mapped_type& v = (*map)[std::string(name)];
  v = typename Map::mapped_type{};
  v.type = type;
  return v;
}

// A new time step of the feature list `name`.
template <typename Map>
typename Map::mapped_type::value_type& NewStep(Map* lists, std::string_view name,
                                               FeatureType type) {
  auto& step = (*lists)[std::string(name)].emplace_back();
  step.type = type;
  return step;
}

}  // namespace

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view name, std::vector<std::string> values) {
  Fresh(&features_, name, FeatureType::kBytes).bytes = std::move(values);
  return *this;
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view name, std::string_view value) {
  return AddBytes(name, std::vector<std::string>{std::string(value)});
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view name,
                                         std::initializer_list<std::string_view> values) {
  return AddBytes(name, std::vector<std::string>(values.begin(), values.end()));
}

ExampleBuilder& ExampleBuilder::AddFloats(std::string_view name, std::vector<float> values) {
  Fresh(&features_, name, FeatureType::kFloat).floats = std::move(values);
  return *this;
}

ExampleBuilder& ExampleBuilder::AddInt64s(std::string_view name, std::vector<int64_t> values) {
  Fresh(&features_, name, FeatureType::kInt64).int64s = std::move(values);
  return *this;
}

size_t ExampleBuilder::FeatureByteSize(const Values& values) {
  return values.type == FeatureType::kNone ? 0 : DelimitedSize(ListSize(values));
}

void ExampleBuilder::PutFeature(std::string* out, const Values& values) {
  if (values.type == FeatureType::kNone) return;
  PutLengthPrefix(out, KindField(values.type), ListSize(values));
  PutList(out, values);
}

size_t ExampleBuilder::FeaturesByteSize() const {
  size_t n = 0;
  for (const auto& [name, values] : features_) {
    n += DelimitedSize(EntrySize(name, FeatureByteSize(values)));
  }
  return n;
}

void ExampleBuilder::PutFeatures(std::string* out) const {
  for (const auto& [name, values] : features_) {
    PutEntryHeader(out, name, FeatureByteSize(values));
    PutFeature(out, values);
  }
}

void ExampleBuilder::SerializeTo(std::string* out) const {
  if (features_.empty()) return;
  size_t features_size = FeaturesByteSize();
  out->reserve(out->size() + DelimitedSize(features_size));
  PutLengthPrefix(out, internal::kExampleFeatures, features_size);
  PutFeatures(out);
}

SequenceExampleBuilder& SequenceExampleBuilder::AddStepBytes(std::string_view name,
                                                             std::vector<std::string> values) {
  NewStep(&lists_, name, FeatureType::kBytes).bytes = std::move(values);
  return *this;
}

SequenceExampleBuilder& SequenceExampleBuilder::AddStepFloats(std::string_view name,
                                                              std::vector<float> values) {
  NewStep(&lists_, name, FeatureType::kFloat).floats = std::move(values);
  return *this;
}

SequenceExampleBuilder& SequenceExampleBuilder::AddStepInt64s(std::string_view name,
                                                              std::vector<int64_t> values) {
  NewStep(&lists_, name, FeatureType::kInt64).int64s = std::move(values);
  return *this;
}

void SequenceExampleBuilder::SerializeTo(std::string* out) const {
  if (!context_.features_.empty()) {
    PutLengthPrefix(out, internal::kSequenceContext, context_.FeaturesByteSize());
    context_.PutFeatures(out);
  }
  if (lists_.empty()) return;
  // FeatureList sizes are needed twice (for FeatureLists' size and for each entry).
  std::vector<size_t> list_sizes;
  list_sizes.reserve(lists_.size());
  size_t lists_size = 0;
  for (const auto& [name, steps] : lists_) {
    size_t n = 0;
    for (const auto& step : steps) n += DelimitedSize(ExampleBuilder::FeatureByteSize(step));
    list_sizes.push_back(n);
    lists_size += DelimitedSize(EntrySize(name, n));
  }
  PutLengthPrefix(out, internal::kSequenceFeatureLists, lists_size);
  size_t i = 0;
  for (const auto& [name, steps] : lists_) {
    PutEntryHeader(out, name, list_sizes[i++]);
    for (const auto& step : steps) {
      PutLengthPrefix(out, internal::kFeatureListFeature, ExampleBuilder::FeatureByteSize(step));
      ExampleBuilder::PutFeature(out, step);
    }
  }
}

}  // namespace sluice::format

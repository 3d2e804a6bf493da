// tf.train.Example and tf.train.SequenceExample, wire-compatible with TensorFlow's
// example.proto / feature.proto (the wire subset and field numbers: docs/example.md).
// Decoding produces views into the serialized bytes: bytes_list values are never copied.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::format {

enum class FeatureType { kNone, kBytes, kFloat, kInt64 };
std::string_view FeatureTypeName(FeatureType type);  // "bytes", "float", "int64", "none"

// One decoded Feature. Views point into the buffer that was parsed.
struct FeatureView {
  FeatureType type = FeatureType::kNone;
  std::vector<ByteView> bytes;  // kBytes: one view per value
  std::vector<float> floats;    // kFloat
  std::vector<int64_t> int64s;  // kInt64
  void Clear() {
    type = FeatureType::kNone;
    bytes.clear();
    floats.clear();
    int64s.clear();
  }
  size_t size() const;
};

// A decoded Example: feature name -> values. Reusable: Parse clears and refills it while
// keeping map nodes and vector capacity, so re-parsing records of the same shape allocates
// nothing. Not thread-safe; the parsed buffer must outlive the views.
class ExampleView {
 public:
  // Parses a serialized tf.train.Example. Unknown fields are skipped; a repeated feature
  // name keeps the last value (protobuf map semantics). Errors are DataLoss naming the byte
  // offset inside the record; after an error the view is empty.
  Status Parse(ByteView serialized);
  const FeatureView* Find(std::string_view name) const;
  // Features in name order.
  const std::map<std::string, FeatureView, std::less<>>& features() const { return features_; }

 private:
  friend class SequenceExampleView;
  using FeatureMap = std::map<std::string, FeatureView, std::less<>>;
  void Reset();

  FeatureMap features_;
  std::vector<FeatureMap::node_type> spare_;  // nodes kept for reuse by the next Parse
};

// A decoded SequenceExample: `context` features plus `feature_lists` (name -> list of
// features, one per time step). Reusable like ExampleView.
class SequenceExampleView {
 public:
  Status Parse(ByteView serialized);
  const ExampleView& context() const { return context_; }
  const std::map<std::string, std::vector<FeatureView>, std::less<>>& feature_lists() const {
    return feature_lists_;
  }

 private:
  using ListMap = std::map<std::string, std::vector<FeatureView>, std::less<>>;
  void Reset();

  ExampleView context_;
  ListMap feature_lists_;
  std::vector<ListMap::node_type> spare_;
};

// The parse stage's fast path: decodes only the wanted features of serialized Examples.
// Unwanted features are skipped without decoding or allocating (their framing is still
// checked, their values are not: a malformed value inside an unwanted feature is not
// reported, while ExampleView would report it). Parse is const and thread-safe.
class ExampleParser {
 public:
  // A name listed twice fills both slots.
  explicit ExampleParser(std::vector<std::string> wanted);

  // Resizes *out to wanted().size() and fills out[i] with feature wanted()[i]: type kNone
  // and no values when the record lacks it. Reuses the capacity of *out and its vectors,
  // so steady-state parsing allocates nothing. Errors are DataLoss naming the byte offset
  // inside the record; *out is then unspecified.
  Status Parse(ByteView serialized, std::vector<FeatureView>* out) const;
  const std::vector<std::string>& wanted() const { return wanted_; }

 private:
  std::vector<std::string> wanted_;
  std::vector<size_t> by_name_;  // indices into wanted_, sorted by name, one per distinct name
  std::vector<std::pair<size_t, size_t>> copies_;  // (slot, slot of the same name to copy)
};

// Builds a serialized Example. Features are emitted in name order (the same bytes as
// Python protobuf's SerializeToString(deterministic=True)). Adding a name again replaces
// its values. A builder with no features serializes to zero bytes (an empty Example).
class ExampleBuilder {
 public:
  ExampleBuilder& AddBytes(std::string_view name, std::vector<std::string> values);
  ExampleBuilder& AddBytes(std::string_view name, std::string_view value);
  // AddBytes("x", {"a", "b"}): without this overload the braces are ambiguous, since C++20's
  // string_view has an iterator-pair constructor.
  ExampleBuilder& AddBytes(std::string_view name, std::initializer_list<std::string_view> values);
  ExampleBuilder& AddFloats(std::string_view name, std::vector<float> values);
  ExampleBuilder& AddInt64s(std::string_view name, std::vector<int64_t> values);
  void Clear() { features_.clear(); }
  // Appends the serialized Example to *out.
  void SerializeTo(std::string* out) const;
  std::string Serialize() const {
    std::string s;
    SerializeTo(&s);
    return s;
  }

 private:
  struct Values {
    FeatureType type = FeatureType::kNone;
    std::vector<std::string> bytes;
    std::vector<float> floats;
    std::vector<int64_t> int64s;
  };
  // Wire encoding; sizes come first because every message is length-prefixed.
  static size_t FeatureByteSize(const Values& values);
  static void PutFeature(std::string* out, const Values& values);
  size_t FeaturesByteSize() const;  // the Features message, without its own key
  void PutFeatures(std::string* out) const;

  std::map<std::string, Values, std::less<>> features_;
  friend class SequenceExampleBuilder;
};

// Builds a serialized SequenceExample, same byte-exactness as ExampleBuilder. The context
// and feature_lists fields are omitted while empty.
class SequenceExampleBuilder {
 public:
  ExampleBuilder& context() { return context_; }
  // Appends one time step (one Feature) to the feature list `name`.
  SequenceExampleBuilder& AddStepBytes(std::string_view name, std::vector<std::string> values);
  SequenceExampleBuilder& AddStepFloats(std::string_view name, std::vector<float> values);
  SequenceExampleBuilder& AddStepInt64s(std::string_view name, std::vector<int64_t> values);
  void Clear() {
    context_.Clear();
    lists_.clear();
  }
  // Appends the serialized SequenceExample to *out.
  void SerializeTo(std::string* out) const;
  std::string Serialize() const {
    std::string s;
    SerializeTo(&s);
    return s;
  }

 private:
  ExampleBuilder context_;
  std::map<std::string, std::vector<ExampleBuilder::Values>, std::less<>> lists_;
};

}  // namespace sluice::format

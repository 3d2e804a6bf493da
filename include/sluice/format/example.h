// tf.train.Example and tf.train.SequenceExample, wire-compatible with TensorFlow's
// example.proto / feature.proto (field numbers in docs/format.md, "Example").
// Decoding produces views into the serialized bytes: bytes_list values are never copied.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::format {

enum class FeatureType { kNone, kBytes, kFloat, kInt64 };
std::string_view FeatureTypeName(FeatureType type);  // "bytes", "float", "int64", "none"

// One decoded Feature. Views point into the buffer that was parsed.
struct FeatureView {
  FeatureType type = FeatureType::kNone;
  std::vector<ByteView> bytes;    // kBytes: one view per value
  std::vector<float> floats;      // kFloat
  std::vector<int64_t> int64s;    // kInt64
  void Clear() {
    type = FeatureType::kNone;
    bytes.clear();
    floats.clear();
    int64s.clear();
  }
  size_t size() const;
};

// A decoded Example: feature name -> values. Reusable: Parse clears and refills it while
// keeping vector capacity, so steady-state parsing allocates little.
class ExampleView {
 public:
  // Parses a serialized tf.train.Example. Unknown fields are skipped. Errors are DataLoss
  // naming the byte offset inside the record.
  Status Parse(ByteView serialized);
  const FeatureView* Find(std::string_view name) const;
  // Features in name order.
  const std::map<std::string, FeatureView, std::less<>>& features() const { return features_; }

 private:
  std::map<std::string, FeatureView, std::less<>> features_;
};

// A decoded SequenceExample: `context` features plus `feature_lists` (name -> list of
// features, one per time step).
class SequenceExampleView {
 public:
  Status Parse(ByteView serialized);
  const ExampleView& context() const { return context_; }
  const std::map<std::string, std::vector<FeatureView>, std::less<>>& feature_lists() const {
    return feature_lists_;
  }

 private:
  ExampleView context_;
  std::map<std::string, std::vector<FeatureView>, std::less<>> feature_lists_;
};

// Builds a serialized Example. Features are emitted in name order (the same bytes as
// Python protobuf's SerializeToString(deterministic=True)).
class ExampleBuilder {
 public:
  ExampleBuilder& AddBytes(std::string_view name, std::vector<std::string> values);
  ExampleBuilder& AddBytes(std::string_view name, std::string_view value);
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
  std::map<std::string, Values, std::less<>> features_;
  friend class SequenceExampleBuilder;
};

class SequenceExampleBuilder {
 public:
  ExampleBuilder& context() { return context_; }
  // Appends one time step (one Feature) to the feature list `name`.
  SequenceExampleBuilder& AddStepBytes(std::string_view name, std::vector<std::string> values);
  SequenceExampleBuilder& AddStepFloats(std::string_view name, std::vector<float> values);
  SequenceExampleBuilder& AddStepInt64s(std::string_view name, std::vector<int64_t> values);
  void SerializeTo(std::string* out) const;

 private:
  ExampleBuilder context_;
  std::map<std::string, std::vector<ExampleBuilder::Values>, std::less<>> lists_;
};

}  // namespace sluice::format

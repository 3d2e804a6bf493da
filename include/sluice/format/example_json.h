// The JSON form of tf.train.Example / SequenceExample (docs/example.md, "JSON form"), used
// by `sluice inspect --json` and by test tools, and schema inference over Examples.
//
// Example: one JSON object per record, features in name order, one line:
//   {"image": {"bytes": ["/9j/4AAQ..."]}, "label": {"int64": [7]}, "box": {"float": [0.5, 1]}}
//   - bytes values are standard base64 (RFC 4648, padded);
//   - floats are written in the shortest form that reads back to the same float (negative
//     zero as -0.0); NaN and infinities, which JSON lacks, are the strings "NaN",
//     "Infinity", "-Infinity" (NaN payload bits are not kept);
//   - int64 values are JSON integers (exact; beware of readers that parse them as doubles);
//   - a feature with no kind set is {};
//   - names are JSON strings; bytes that are not valid UTF-8 become U+FFFD.
// SequenceExample: {"context": {<features as above>},
//                   "feature_lists": {"name": [{<feature>}, {<feature>}, ...]}}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "sluice/base/status.h"
#include "sluice/format/example.h"
#include "sluice/format/manifest.h"

namespace sluice::format {

std::string ExampleToJson(const ExampleView& example);
std::string SequenceExampleToJson(const SequenceExampleView& example);

// The inverses: add the features described by `json` (the form above) to *builder.
// InvalidArgument naming the feature when the JSON does not have that form, including a
// feature with no kind ({}), which the builders cannot express.
Status ExampleFromJson(std::string_view json, ExampleBuilder* builder);
Status SequenceExampleFromJson(std::string_view json, SequenceExampleBuilder* builder);

// A number as a float feature stores it (float32), or InvalidArgument when float32 would
// change it beyond rounding (docs/example.md): an integer that float32 cannot hold exactly
// (beyond 2^24 = 16777216 in magnitude, unless the low bits are zero), a finite number beyond
// float32's range (it would become infinite), a nonzero number that would become 0. Decimal
// fractions round to the nearest float32, as in every float feature. The messages name the
// value only; callers add the feature and the line.
Result<float> IntegerToFloat32(int64_t value);
Result<float> NumberToFloat32(double value);

// Infers the feature schema of a stream of Examples (the `features` of dataset.json):
// each feature's type, and its values per record, -1 when the count varies between records
// or the feature is missing from some. Not thread-safe; give each worker its own and Merge.
class SchemaInference {
 public:
  // Adds one record. InvalidArgument, naming the feature and the record (counted from 0
  // over everything added), when a feature's type differs from the one seen before; the
  // inference is then unchanged. A feature with no kind is compatible with any type.
  Status Add(const ExampleView& example);
  // Adds all records another inference saw, as if they followed this one's.
  Status Merge(const SchemaInference& other);

  uint64_t records() const { return records_; }
  std::map<std::string, FeatureSchema> schema() const;

 private:
  struct Seen {
    FeatureType type = FeatureType::kNone;
    int64_t values_per_record = 0;  // -1 once it varies
    uint64_t records = 0;           // records holding the feature
  };
  // Checks then applies `incoming` (features of `records` more records).
  Status Combine(const std::map<std::string, Seen, std::less<>>& incoming, uint64_t records);

  uint64_t records_ = 0;
  std::map<std::string, Seen, std::less<>> seen_;
};

}  // namespace sluice::format

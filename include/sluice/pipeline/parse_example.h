// parse_example: turns serialized tf.train.Example records into tensors, one per wanted
// feature (int64 -> int64, float -> float32, bytes -> string or uint8).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sluice/pipeline/pipeline_options.h"
#include "sluice/pipeline/tensor.h"

namespace sluice::pipeline {

struct FeatureSpec {
  std::string name;
  // int64, float32 (from float_list), string (bytes_list values), or uint8 (a bytes_list
  // with one value, exposed as its raw bytes: shape [-1]).
  DType dtype = DType::kInt64;
  // Shape of the values. {} = exactly one value (a scalar); {3} = exactly three; {-1} = any
  // count (varies per record); {-1, 4} = rows of 4. At most one dimension may be -1.
  Shape shape;
  // A missing feature is an error (naming feature and record) unless it is optional; then
  // it parses as no values (or zeros when the shape is fixed). Default: required.
  bool optional = false;
};

struct ParseExampleOptions {
  std::optional<ErrorPolicy> on_error;  // Default: PipelineOptions::on_error
  int parallelism = -1;                 // Default: autotune (like map)
};

}  // namespace sluice::pipeline

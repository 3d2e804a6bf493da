// decode_image: the pipeline stage that turns a feature of encoded images (JPEG/PNG bytes)
// into a fixed-shape tensor per element, through an ImageTransform (decode + ops + dtype and
// layout). It is a map stage (Dataset::Map) named "map:decode_image", so it runs on the
// pipeline's pool, is autotuned, follows on_error naming the record (shard, index), and shows
// in the stall report like any map.
//
//   auto ds = DecodeImage(parsed, {.input = "image/encoded",
//                                  .ops = {RandomResizedCrop{}, RandomHorizontalFlip{},
//                                          Normalize{{0.485f, 0.456f, 0.406f},
//                                                    {0.229f, 0.224f, 0.225f}}},
//                                  .output = "image"});
//   // ds->Batch(256): "image" is float32 [256, 3, 224, 224]
//
// Randomness comes from MapContext::rng(): a pure function of (seed, epoch, global position),
// so a restored iterator and any thread count reproduce the same crops and flips.
// See docs/vision.md ("The decode_image stage").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/vision/ops.h"
#include "sluice/vision/transform.h"

namespace sluice::vision {

struct DecodeImageOptions {
  // The feature holding the encoded image: a scalar string (parse_example's "bytes") or a
  // uint8 vector. Default: "image/encoded".
  std::string input = "image/encoded";
  // Applied in order; the last size-changing op must fix the output size (ImageTransform::Make).
  // Default: none (then the output size is not fixed and Make fails: give a crop or a Resize).
  std::vector<Op> ops;
  OutputSpec output_spec;  // Default: float32, NCHW
  // Name of the decoded tensor. It takes the input feature's place in the schema unless
  // keep_input is set, then it is appended. Default: "image".
  std::string output = "image";
  // Keep the encoded bytes in the element as well. Default: false (they are dropped).
  bool keep_input = false;
  TransformOptions transform;  // Default: TransformOptions's defaults (caps, DCT scaling on)
  // Concurrent decode tasks. Default: kAutotune (the autotuner grows it to the pool's size).
  int parallelism = pipeline::kAutotune;
  size_t chunk_elements = 8;  // Default: 8 images per task
  // Under a batch, decode each image straight into its slot of the batch buffer (map into
  // slot, docs/pipeline.md) instead of into a tensor of its own that batch then copies.
  // Same results either way. Default: true.
  bool into_batch = true;
  std::optional<pipeline::ErrorPolicy> on_error;  // Default: PipelineOptions::on_error
};

// `input` followed by the decode_image stage. InvalidArgument for a bad op list, a missing
// or non-bytes input feature, or an output name already used by another feature.
Result<pipeline::Dataset> DecodeImage(const pipeline::Dataset& input, DecodeImageOptions options);

}  // namespace sluice::vision

// Dataset.decode_image: the C++ decode_image stage (include/sluice/vision/decode_image.h)
// with the ops of sluice.vision (python/sluice/vision.py) passed as tuples
// ("RandomResizedCrop", height, width, scale_min, scale_max, ratio_min, ratio_max), ...
// No Python runs per sample: the stage decodes on the pipeline's threads without the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "sluice/pipeline/dataset.h"

namespace sluice::python {

namespace py = pybind11;

pipeline::Dataset DecodeImage(const pipeline::Dataset& d, const std::string& input,
                              const py::list& ops, const std::string& layout,
                              const std::string& dtype, const std::string& output, bool keep_input,
                              int parallelism, const std::optional<std::string>& on_error,
                              bool dct_scaling, bool into_batch);

}  // namespace sluice::python

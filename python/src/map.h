// map / filter with Python callables: the documented slow path. The callable runs on the
// pipeline's threads holding the GIL (so Python maps do not run in parallel with each other),
// receives the element as a dict of numpy arrays / bytes / Strings (tensors.h) and returns a
// dict with every feature of the stage's output schema.
#pragma once

#include <pybind11/pybind11.h>

#include "sluice/pipeline/map.h"

namespace sluice::python {

namespace py = pybind11;

// `with_seed`: call fn(element, seed) where seed is the sample's 64-bit random seed (a pure
// function of shuffle seed, epoch and global position: reproducible augmentation).
pipeline::MapFn PythonMap(py::object fn, bool with_seed);
pipeline::FilterFn PythonFilter(py::object predicate);

// Built-in C++ functions usable by name: "identity" (benchmarks, tests). Null if unknown.
pipeline::MapFn BuiltinMap(const std::string& name);

}  // namespace sluice::python

// Writing data from Python: tf.train.Example records (make_example) and, once the record
// writer is in, shards.
#pragma once

#include <pybind11/pybind11.h>

namespace sluice::python {
void RegisterWriters(pybind11::module_& m);
}  // namespace sluice::python

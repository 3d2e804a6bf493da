#pragma once

#include <pybind11/pybind11.h>

namespace sluice::python {
// Registers _Dataset (one method per pipeline stage) in `m`.
void RegisterDataset(pybind11::module_& m);
}  // namespace sluice::python

// Versioned tables from Python (docs/table.md): sluice._sluice._Table, _TableWriter and the
// helpers sluice.read uses to pin a table version.
#pragma once

#include <pybind11/pybind11.h>

namespace sluice::python {
void RegisterTable(pybind11::module_& m);
}  // namespace sluice::python

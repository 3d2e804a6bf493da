// The extension module sluice._sluice. The Python package (python/sluice/) is the public
// API; this module holds what runs in C++ (docs/python.md).
#include <pybind11/pybind11.h>

#include "dataset.h"
#include "errors.h"
#include "iterator.h"
#include "table.h"
#include "tensors.h"
#include "text.h"
#include "writer.h"

PYBIND11_MODULE(_sluice, m) {
  m.doc() = "sluice's C++ engine (use the `sluice` package, not this module)";
  m.attr("__version__") = SLUICE_VERSION;
  sluice::python::RegisterErrors(m);
  sluice::python::RegisterTensors(m);
  sluice::python::RegisterIterator(m);
  sluice::python::RegisterDataset(m);
  sluice::python::RegisterText(m);
  sluice::python::RegisterWriters(m);
  sluice::python::RegisterTable(m);
}

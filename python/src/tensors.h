// Tensors <-> Python. Dense tensors become numpy arrays whose memory is the tensor's buffer
// (no copy): the array's `base` is a BatchBuffer holding a reference to that buffer, so the
// bytes live as long as any array (or torch tensor made by torch.from_numpy) uses them, and
// the pipeline allocates a fresh buffer for its next batch instead of overwriting them.
// String tensors become Strings: a (values, offsets) pair of numpy arrays over the buffer
// (docs/python.md, "Batches").
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <vector>

#include "sluice/pipeline/element.h"
#include "sluice/pipeline/tensor.h"

namespace sluice::python {

namespace py = pybind11;
using pipeline::BufferRef;
using pipeline::DType;
using pipeline::Element;
using pipeline::FeatureInfo;
using pipeline::Schema;
using pipeline::Shape;
using pipeline::Tensor;

// Registers BatchBuffer and Strings in `m`.
void RegisterTensors(py::module_& m);

py::dtype NumpyDType(DType dtype);  // not for kString

// A dense tensor as an ndarray over its buffer; a string tensor as Strings (a scalar string
// as bytes).
py::object TensorToPython(const Tensor& t);

// The element as {name: value}, names in schema order (`names` are the schema's names made
// once, so no string is built per element).
py::dict ElementToDict(const Element& e, const std::vector<py::str>& names);
std::vector<py::str> SchemaNames(const Schema& schema);

// Fills *out from a Python value for feature `info`: numbers / arrays are converted like
// numpy.ascontiguousarray(value, dtype) and must match the feature's shape where it is
// known; strings accept bytes, str (UTF-8), a sequence of them, or Strings. Errors are
// InvalidArgument naming the feature. GIL held.
Status PythonToTensor(py::handle value, const FeatureInfo& info, pipeline::BufferPool* pool,
                      Tensor* out);

// "uint8" / "int32" / "int64" / "float16" / "float32" / "string", plus "bytes" (= string) and
// "float" (= float32), the names users know from tf.train.Example.
Result<DType> ParseUserDType(std::string_view name);

// A feature spec from Python: "int64", "float32[3]", "int64[-1]", ("int64", [-1]) or
// ("bytes", [], True) (dtype, shape, optional). Raises InvalidArgumentError.
struct UserFeature {
  DType dtype = DType::kInt64;
  Shape shape;
  bool optional = false;
};
UserFeature ParseUserFeature(const std::string& name, py::handle spec);

}  // namespace sluice::python

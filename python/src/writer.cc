#include "writer.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "errors.h"
#include "sluice/format/example.h"

namespace sluice::python {
namespace {

namespace py = pybind11;

bool IsBytesLike(py::handle v) {
  return py::isinstance<py::bytes>(v) || py::isinstance<py::str>(v) || PyByteArray_Check(v.ptr());
}

std::string BytesOf(py::handle v) {
  if (PyByteArray_Check(v.ptr())) return py::bytes(py::reinterpret_borrow<py::object>(v));
  return v.cast<std::string>();
}

// One feature: bytes/str -> bytes_list; bool/int -> int64_list; float -> float_list; a
// sequence or ndarray of those -> a list of that kind (ndarray kinds: i/u/b -> int64, f ->
// float, S/O -> bytes).
void AddFeature(format::ExampleBuilder* b, const std::string& name, py::handle value) {
  if (IsBytesLike(value)) {
    b->AddBytes(name, BytesOf(value));
    return;
  }
  py::array a = py::array::ensure(value);
  if (!a) {
    throw py::type_error("make_example: feature '" + name + "' has an unsupported value " +
                         py::repr(value).cast<std::string>());
  }
  char kind = a.dtype().kind();
  py::array flat = a.attr("reshape")(-1);
  if (kind == 'i' || kind == 'u' || kind == 'b') {
    b->AddInt64s(name, flat.attr("astype")("int64").attr("tolist")().cast<std::vector<int64_t>>());
  } else if (kind == 'f') {
    b->AddFloats(name, flat.attr("astype")("float32").attr("tolist")().cast<std::vector<float>>());
  } else if (kind == 'S' || kind == 'O' || kind == 'U') {
    std::vector<std::string> values;
    for (py::handle v : flat) {
      if (!IsBytesLike(v)) {
        throw py::type_error("make_example: feature '" + name + "' has an unsupported value " +
                             py::repr(v).cast<std::string>());
      }
      values.push_back(BytesOf(v));
    }
    b->AddBytes(name, std::move(values));
  } else {
    throw py::type_error("make_example: feature '" + name + "' has dtype " +
                         py::str(a.dtype()).cast<std::string>());
  }
}

py::bytes MakeExample(const py::dict& features) {
  format::ExampleBuilder b;
  for (auto [key, value] : features) AddFeature(&b, py::str(key).cast<std::string>(), value);
  return py::bytes(b.Serialize());
}

}  // namespace

void RegisterWriters(py::module_& m) {
  m.def("make_example", &MakeExample, py::arg("features"),
        "A serialized tf.train.Example from {name: value}: bytes/str -> bytes_list, int -> "
        "int64_list, float -> float_list; lists and numpy arrays give lists of that kind.");
}

}  // namespace sluice::python

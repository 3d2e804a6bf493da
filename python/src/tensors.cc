#include "tensors.h"

#include <cstring>
#include <string>

#include "errors.h"

namespace sluice::python {
namespace {

// Keeps a pipeline buffer alive while numpy uses it: the `base` of every array we make.
// `address` and `capacity` let tests check that an array's memory lies inside the buffer.
struct BatchBuffer {
  BufferRef ref;
};

// A string tensor: `count` strings, offsets (count + 1 uint64) at the start of the buffer,
// the concatenated values from `values_offset` (the layout of pipeline::Tensor).
struct Strings {
  BufferRef ref;
  Shape shape;
  int64_t count = 0;
  size_t values_offset = 0;
  size_t nbytes = 0;

  const uint64_t* offsets() const { return reinterpret_cast<const uint64_t*>(ref.data()); }
  const char* values() const { return ref.data() + values_offset; }
  py::bytes At(int64_t i) const {
    if (i < 0) i += count;
    if (i < 0 || i >= count) throw py::index_error("string index out of range");
    const uint64_t* off = offsets();
    return py::bytes(values() + off[i], off[i + 1] - off[i]);
  }
};

std::vector<py::ssize_t> Dims(const Shape& shape) {
  std::vector<py::ssize_t> dims(shape.rank());
  for (size_t i = 0; i < shape.rank(); ++i) dims[i] = shape[i];
  return dims;
}

// An array of `dims` over memory inside `owner`'s buffer; `owner` becomes its base.
py::array ViewOf(py::dtype dtype, std::vector<py::ssize_t> dims, const void* data,
                 py::handle owner) {
  return py::array(std::move(dtype), std::move(dims), {}, data, owner);
}

// A fresh zero-filled array (py::array leaves new memory uninitialized).
py::array Zeros(py::dtype dtype, std::vector<py::ssize_t> dims) {
  py::array a(std::move(dtype), std::move(dims));
  if (a.nbytes() > 0) std::memset(a.mutable_data(), 0, static_cast<size_t>(a.nbytes()));
  return a;
}

py::object StringsValues(py::object self) {
  const Strings& s = self.cast<const Strings&>();
  if (!s.ref) return Zeros(py::dtype::of<uint8_t>(), {0});
  return ViewOf(py::dtype::of<uint8_t>(), {static_cast<py::ssize_t>(s.nbytes)}, s.values(), self);
}

py::object StringsOffsets(py::object self) {
  const Strings& s = self.cast<const Strings&>();
  if (!s.ref) return Zeros(py::dtype::of<uint64_t>(), {1});
  return ViewOf(py::dtype::of<uint64_t>(), {static_cast<py::ssize_t>(s.count + 1)}, s.offsets(),
                self);
}

// Nested lists of bytes following the shape (a flat list for rank 1).
py::list StringsToList(const Strings& s) {
  std::vector<int64_t> dims(s.shape.rank());
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = s.shape[i];
  int64_t next = 0;
  auto build = [&](auto&& self, size_t axis) -> py::list {
    py::list out;
    for (int64_t i = 0; i < dims[axis]; ++i) {
      if (axis + 1 == dims.size()) {
        out.append(s.At(next++));
      } else {
        out.append(self(self, axis + 1));
      }
    }
    return out;
  };
  if (dims.empty()) {
    py::list one;
    one.append(s.At(0));
    return one;
  }
  return build(build, 0);
}

Strings MakeStrings(const Tensor& t) {
  Strings s;
  s.ref = t.buffer();
  s.shape = t.shape();
  s.count = t.num_elements();
  s.values_offset = t.values_offset();
  s.nbytes = t.nbytes();
  return s;
}

}  // namespace

void RegisterTensors(py::module_& m) {
  py::class_<BatchBuffer>(m, "BatchBuffer",
                          "The pipeline buffer a batch array lives in (the array's `base`).")
      .def_property_readonly(
          "address", [](const BatchBuffer& b) { return reinterpret_cast<uintptr_t>(b.ref.data()); })
      .def_property_readonly("capacity", [](const BatchBuffer& b) { return b.ref.capacity(); })
      .def_property_readonly(
          "ref_count", [](const BatchBuffer& b) { return b.ref ? b.ref.get()->ref_count() : 0u; });

  py::class_<Strings>(m, "Strings",
                      "Byte strings of a batch feature, zero-copy: `values` (uint8) holds them "
                      "concatenated and string i is values[offsets[i]:offsets[i+1]]. Indexing "
                      "and iteration give bytes, in row-major order of `shape`.")
      .def_property_readonly("values", &StringsValues)
      .def_property_readonly("offsets", &StringsOffsets)
      .def_property_readonly("shape",
                             [](const Strings& s) {
                               py::tuple t(s.shape.rank());
                               for (size_t i = 0; i < s.shape.rank(); ++i) t[i] = s.shape[i];
                               return t;
                             })
      .def("__len__", [](const Strings& s) { return s.count; })
      .def("__getitem__", &Strings::At)
      .def("__iter__", [](py::object self) { return py::iter(self.attr("tolist")()); })
      .def("tolist", &StringsToList, "Nested lists of bytes, following `shape`.")
      .def(
          "numpy",
          [](const Strings& s) {
            py::array out(py::dtype("O"), Dims(s.shape));
            auto* items = static_cast<PyObject**>(out.mutable_data());
            for (int64_t i = 0; i < s.count; ++i) {
              Py_XDECREF(items[i]);
              items[i] = s.At(i).release().ptr();
            }
            return out;
          },
          "An object array of bytes with this shape (a copy).")
      .def("__repr__", [](const Strings& s) {
        return "Strings(shape=" + s.shape.ToString() + ", bytes=" + std::to_string(s.nbytes) + ")";
      });
}

constexpr int kNumpyHalf = 23;  // NPY_HALF: numpy's type number of float16

py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return py::dtype::of<uint8_t>();
    case DType::kInt32:
      return py::dtype::of<int32_t>();
    case DType::kInt64:
      return py::dtype::of<int64_t>();
    case DType::kFloat16:
      return py::dtype(kNumpyHalf);
    case DType::kFloat32:
      return py::dtype::of<float>();
    case DType::kString:
      break;
  }
  throw py::type_error("string tensors have no numpy dtype");
}

py::object TensorToPython(const Tensor& t) {
  if (t.is_string()) {
    if (t.shape().rank() == 0) {
      ByteView v = t.buffer() ? t.string(0) : ByteView();
      return py::bytes(v.data(), v.size());
    }
    return py::cast(MakeStrings(t));
  }
  if (t.num_elements() == 0 || !t.buffer()) return Zeros(NumpyDType(t.dtype()), Dims(t.shape()));
  py::object owner = py::cast(BatchBuffer{t.buffer()});
  return ViewOf(NumpyDType(t.dtype()), Dims(t.shape()), t.raw_data(), owner);
}

std::vector<py::str> SchemaNames(const Schema& schema) {
  std::vector<py::str> names;
  for (const FeatureInfo& f : schema.features()) names.emplace_back(f.name);
  return names;
}

py::dict ElementToDict(const Element& e, const std::vector<py::str>& names) {
  py::dict d;
  size_t n = std::min(names.size(), e.tensors.size());
  for (size_t i = 0; i < n; ++i) d[names[i]] = TensorToPython(e.tensors[i]);
  return d;
}

Result<DType> ParseUserDType(std::string_view name) {
  if (name == "bytes" || name == "str") return DType::kString;
  if (name == "float") return DType::kFloat32;
  return pipeline::ParseDType(name);
}

namespace {

Shape ShapeFromSequence(const std::string& feature, py::handle seq) {
  Shape shape;
  for (py::handle d : seq) {
    if (!shape.PushBack(d.cast<int64_t>())) {
      ThrowStatus(InvalidArgument("feature '" + feature + "': more than " +
                                  std::to_string(pipeline::kMaxRank) + " dimensions"));
    }
  }
  return shape;
}

// "int64[-1, 4]" -> (int64, [-1, 4]).
UserFeature ParseSpecString(const std::string& feature, const std::string& spec) {
  UserFeature f;
  size_t bracket = spec.find('[');
  f.dtype = ValueOrThrow(ParseUserDType(spec.substr(0, bracket)));
  if (bracket == std::string::npos) return f;
  if (spec.back() != ']') {
    ThrowStatus(InvalidArgument("feature '" + feature + "': bad spec '" + spec +
                                "' (expected e.g. 'int64', 'float32[3]', 'int64[-1]')"));
  }
  std::string inner = spec.substr(bracket + 1, spec.size() - bracket - 2);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string part =
        inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      if (!f.shape.PushBack(std::stoll(part))) throw std::out_of_range("rank");
    } catch (const std::exception&) {
      ThrowStatus(InvalidArgument("feature '" + feature + "': bad dimension '" + part + "' in '" +
                                  spec + "'"));
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return f;
}

}  // namespace

UserFeature ParseUserFeature(const std::string& name, py::handle spec) {
  if (py::isinstance<py::str>(spec)) return ParseSpecString(name, spec.cast<std::string>());
  if (py::isinstance<py::tuple>(spec) || py::isinstance<py::list>(spec)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(spec);
    if (seq.size() >= 1 && seq.size() <= 3 && py::isinstance<py::str>(seq[0])) {
      UserFeature f = ParseSpecString(name, seq[0].cast<std::string>());
      if (seq.size() >= 2) f.shape = ShapeFromSequence(name, seq[1]);
      if (seq.size() == 3) f.optional = seq[2].cast<bool>();
      return f;
    }
  }
  ThrowStatus(InvalidArgument("feature '" + name + "': bad spec " +
                              py::repr(spec).cast<std::string>() +
                              " (expected 'int64', 'float32[3]', or (dtype, shape[, optional]))"));
}

namespace {

Status StringsToTensor(py::handle value, const FeatureInfo& info, pipeline::BufferPool* pool,
                       Tensor* out) {
  auto as_bytes = [](py::handle v, std::string* s) -> bool {
    if (py::isinstance<py::bytes>(v) || py::isinstance<py::str>(v)) {
      *s = v.cast<std::string>();  // str: UTF-8
      return true;
    }
    if (PyByteArray_Check(v.ptr()) || PyMemoryView_Check(v.ptr())) {
      *s = py::bytes(py::reinterpret_borrow<py::object>(v)).cast<std::string>();
      return true;
    }
    return false;
  };
  std::vector<std::string> items;
  std::string one;
  bool scalar = as_bytes(value, &one);
  if (scalar) {
    items.push_back(std::move(one));
  } else if (py::isinstance<py::iterable>(value)) {
    for (py::handle v : value) {
      if (!as_bytes(v, &one)) {
        return InvalidArgument("feature '" + info.name + "': expected bytes or str, got " +
                               py::repr(v).cast<std::string>());
      }
      items.push_back(std::move(one));
    }
  } else {
    return InvalidArgument("feature '" + info.name +
                           "': expected bytes, str or a sequence of them, got " +
                           py::repr(value.get_type()).cast<std::string>());
  }
  Shape shape = scalar ? Shape() : Shape{static_cast<int64_t>(items.size())};
  if (!info.shape.Matches(shape)) {
    return InvalidArgument("feature '" + info.name + "': got strings of shape " + shape.ToString() +
                           ", the output schema says " + info.shape.ToString());
  }
  size_t total = 0;
  for (const std::string& s : items) total += s.size();
  out->ResizeStrings(shape, total, pool);
  uint64_t* off = out->mutable_offsets();
  char* dst = out->mutable_values();
  off[0] = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::memcpy(dst + off[i], items[i].data(), items[i].size());
    off[i + 1] = off[i] + items[i].size();
  }
  return Status::OK();
}

const py::module_& Numpy() {
  static auto* np = new py::module_(py::module_::import("numpy"));  // leaked on purpose
  return *np;
}

// Where `src` holds values that `target` cannot store: numpy's casts wrap integers (2**40 is
// 0 as int32), truncate floats (1.5 is 1) and overflow to inf (1e40 as float32), at most with
// a warning. Floats may round to the target's precision.
py::object ValuesThatDoNotFit(const py::array& src, DType target, const py::dtype& dtype) {
  const py::module_& np = Numpy();
  const char kind = src.dtype().kind();
  const bool integer = target != DType::kFloat16 && target != DType::kFloat32;
  if (integer) {
    if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'O') return py::none();
    py::object limits = np.attr("iinfo")(dtype);
    py::object bad = np.attr("logical_or")(np.attr("less")(src, limits.attr("min")),
                                           np.attr("greater")(src, limits.attr("max")));
    if (kind == 'f') {  // also NaN and fractions
      bad = np.attr("logical_or")(bad, np.attr("not_equal")(src, np.attr("trunc")(src)));
    }
    return bad;
  }
  if (kind != 'i' && kind != 'u' && kind != 'f') return py::none();
  py::object max = np.attr("finfo")(dtype).attr("max");
  return np.attr("logical_and")(np.attr("isfinite")(src),
                                np.attr("greater")(np.attr("abs")(src), max));
}

// The function's value as an array of the feature's dtype, or an error when numpy would
// change a value on the way.
Result<py::array> ToDType(py::handle value, const FeatureInfo& info) {
  py::dtype dtype = NumpyDType(info.dtype);
  try {
    py::array src = Numpy().attr("asarray")(value);
    if (src.dtype().num() == dtype.num()) return src;
    py::object bad = ValuesThatDoNotFit(src, info.dtype, dtype);
    if (!bad.is_none() && Numpy().attr("any")(bad).cast<bool>()) {
      size_t at = Numpy().attr("flatnonzero")(bad).attr("__getitem__")(0).cast<size_t>();
      py::object v = src.attr("reshape")(-1).attr("__getitem__")(at);
      return InvalidArgument("feature '" + info.name + "': value " +
                             py::repr(v).cast<std::string>() + " does not fit its dtype " +
                             std::string(pipeline::DTypeName(info.dtype)) +
                             " (numpy would store a different number)");
    }
    return py::array(src.attr("astype")(dtype));
  } catch (py::error_already_set& e) {
    return InvalidArgument("feature '" + info.name + "': cannot store the value as " +
                           std::string(pipeline::DTypeName(info.dtype)) + ": " + e.what());
  }
}

}  // namespace

Status PythonToTensor(py::handle value, const FeatureInfo& info, pipeline::BufferPool* pool,
                      Tensor* out) {
  if (info.dtype == DType::kString) return StringsToTensor(value, info, pool, out);
  SLUICE_ASSIGN_OR_RETURN(py::array a, ToDType(value, info));
  if (!(a.flags() & py::array::c_style)) a = a.attr("copy")("C");
  Shape shape;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    if (!shape.PushBack(a.shape(i))) {
      return InvalidArgument("feature '" + info.name + "': more than " +
                             std::to_string(pipeline::kMaxRank) + " dimensions");
    }
  }
  if (!info.shape.Matches(shape)) {
    return InvalidArgument("feature '" + info.name + "': got shape " + shape.ToString() +
                           ", the output schema says " + info.shape.ToString());
  }
  out->ResizeDense(info.dtype, shape, pool);
  if (a.nbytes() > 0) std::memcpy(out->raw_data(), a.data(), static_cast<size_t>(a.nbytes()));
  return Status::OK();
}

}  // namespace sluice::python

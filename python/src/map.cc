#include "map.h"

#include <memory>

#include "errors.h"
#include "tensors.h"
#include "thread_gil.h"

namespace sluice::python {
namespace {

// Holds the callable; destroyed with the GIL held (the last reference to the stage may
// drop on any thread, so its Python objects must not be released without it).
class PythonCallable {
 public:
  explicit PythonCallable(py::object fn) : fn_(std::move(fn)) {}
  ~PythonCallable() {
    if (!PythonAlive()) {  // the interpreter is going: leak rather than touch it
      fn_.release();
      for (py::str& name : names_) name.release();
      return;
    }
    PipelineThreadGil gil;
    fn_ = py::object();
    names_.clear();
  }
  const py::object& fn() const { return fn_; }

  // Names of a schema as Python strings, made once per schema.
  const std::vector<py::str>& Names(const pipeline::Schema& schema) {
    if (names_schema_ != &schema) {
      names_ = SchemaNames(schema);
      names_schema_ = &schema;
    }
    return names_;
  }

 private:
  py::object fn_;
  // Guarded by the GIL.
  const pipeline::Schema* names_schema_ = nullptr;
  std::vector<py::str> names_;
};

// The function's result -> the element's tensors, in output schema order.
// Errors need not name the stage: the pipeline adds stage and record.
Status StoreResult(py::handle result, const pipeline::MapContext& ctx, pipeline::Element* e) {
  if (!py::isinstance<py::dict>(result)) {
    return InvalidArgument("the function must return a dict of features, got " +
                           py::repr(result.get_type()).cast<std::string>());
  }
  py::dict d = py::reinterpret_borrow<py::dict>(result);
  const pipeline::Schema& out = ctx.output_schema();
  if (d.size() != out.size()) {
    for (auto item : d) {
      std::string key = py::str(item.first).cast<std::string>();
      if (out.Find(key) < 0) {
        return InvalidArgument("the function returned '" + key +
                               "', which is not in its output schema " + out.ToString() +
                               " (declare new features with map(..., output={...}))");
      }
    }
  }
  std::vector<Tensor> tensors(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const FeatureInfo& f = out[i];
    PyObject* v = PyDict_GetItemString(d.ptr(), f.name.c_str());
    if (v == nullptr) {
      return InvalidArgument("the function's result lacks feature '" + f.name +
                             "' of its output schema " + out.ToString());
    }
    SLUICE_RETURN_IF_ERROR(PythonToTensor(v, f, ctx.pool(), &tensors[i]));
  }
  e->tensors = std::move(tensors);
  return Status::OK();
}

}  // namespace

pipeline::MapFn PythonMap(py::object fn, bool with_seed) {
  auto callable = std::make_shared<PythonCallable>(std::move(fn));
  return [callable, with_seed](pipeline::Element* e, const pipeline::MapContext& ctx) -> Status {
    PipelineThreadGil gil;
    try {
      py::dict element = ElementToDict(*e, callable->Names(ctx.input_schema()));
      py::object result =
          with_seed ? callable->fn()(element, ctx.rng().NextU64()) : callable->fn()(element);
      return StoreResult(result, ctx, e);
    } catch (py::error_already_set& err) {
      return StatusFromPython(err);
    } catch (const std::exception& err) {  // a failed cast inside pybind11
      return InvalidArgument(err.what());
    }
  };
}

pipeline::FilterFn PythonFilter(py::object predicate) {
  auto callable = std::make_shared<PythonCallable>(std::move(predicate));
  return [callable](const pipeline::Element& e, const pipeline::MapContext& ctx) -> Result<bool> {
    PipelineThreadGil gil;
    try {
      py::dict element = ElementToDict(e, callable->Names(ctx.input_schema()));
      return py::bool_(callable->fn()(element)).cast<bool>();
    } catch (py::error_already_set& err) {
      return StatusFromPython(err);
    } catch (const std::exception& err) {
      return InvalidArgument(err.what());
    }
  };
}

pipeline::MapFn BuiltinMap(const std::string& name) {
  if (name == "identity") {
    return [](pipeline::Element*, const pipeline::MapContext&) { return Status::OK(); };
  }
  return nullptr;
}

}  // namespace sluice::python

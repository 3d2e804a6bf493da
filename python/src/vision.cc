#include "vision.h"

#include <pybind11/stl.h>

#include <vector>

#include "errors.h"
#include "sluice/vision/decode_image.h"

namespace sluice::python {
namespace {

vision::Op OpFromTuple(const py::tuple& t) {
  const std::string name = t[0].cast<std::string>();
  auto u32 = [&](size_t i) { return t[i].cast<uint32_t>(); };
  auto f64 = [&](size_t i) { return t[i].cast<double>(); };
  if (name == "RandomResizedCrop" && t.size() == 7) {
    return vision::RandomResizedCrop{u32(1), u32(2), f64(3), f64(4), f64(5), f64(6)};
  }
  if (name == "Resize" && t.size() == 4) return vision::Resize{u32(1), u32(2), u32(3)};
  if (name == "CenterCrop" && t.size() == 3) return vision::CenterCrop{u32(1), u32(2)};
  if (name == "RandomHorizontalFlip" && t.size() == 2) return vision::RandomHorizontalFlip{f64(1)};
  if (name == "Normalize" && t.size() == 3) {
    auto mean = t[1].cast<std::vector<float>>(), stdev = t[2].cast<std::vector<float>>();
    if (mean.size() != 3 || stdev.size() != 3) {
      ThrowStatus(InvalidArgument("Normalize: mean and std need 3 values (R, G, B)"));
    }
    return vision::Normalize{{mean[0], mean[1], mean[2]}, {stdev[0], stdev[1], stdev[2]}};
  }
  ThrowStatus(
      InvalidArgument("decode_image: not a sluice.vision op: " + py::repr(t).cast<std::string>()));
}

}  // namespace

pipeline::Dataset DecodeImage(const pipeline::Dataset& d, const std::string& input,
                              const py::list& ops, const std::string& layout,
                              const std::string& dtype, const std::string& output, bool keep_input,
                              int parallelism, const std::optional<std::string>& on_error,
                              bool dct_scaling, bool into_batch) {
  vision::DecodeImageOptions o;
  o.input = input;
  for (py::handle op : ops) o.ops.push_back(OpFromTuple(py::reinterpret_borrow<py::tuple>(op)));
  o.output_spec.layout = ValueOrThrow(vision::ParseLayout(layout));
  o.output_spec.dtype = ValueOrThrow(vision::ParseImageDType(dtype));
  o.output = output;
  o.keep_input = keep_input;
  o.parallelism = parallelism;
  if (on_error) o.on_error = ValueOrThrow(pipeline::ParseErrorPolicy(*on_error));
  o.transform.dct_scaling = dct_scaling;
  o.into_batch = into_batch;
  pipeline::Dataset out = ValueOrThrow(vision::DecodeImage(d, std::move(o)));
  ThrowIfError(out.status());
  return out;
}

}  // namespace sluice::python

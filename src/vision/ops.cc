#include "sluice/vision/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sluice::vision {
namespace {

// Python's round(): half to even, which std::nearbyint does in the default rounding mode.
int64_t PyRound(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;  // clang 14 lacks aggregate deduction

std::string Fmt(const char* format, double a, double b = 0, double c = 0) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), format, a, b, c);
  return buf;
}

// The image the ops so far have produced, as a map onto the source: virtual pixel
// coordinate u maps to source coordinate a * u + b on each axis (a < 0 after a flip).
// [c0, c1) is the part of the virtual image that shows the source; outside it is padding.
struct Axis {
  uint32_t size;
  double a = 1.0, b = 0.0;
  int64_t c0 = 0, c1 = 0;

  bool full() const { return c0 == 0 && c1 == size; }
  void Scale(uint32_t new_size) {  // a resize of the whole axis
    a *= static_cast<double>(size) / new_size;
    size = new_size;
    c0 = 0;
    c1 = new_size;
  }
  void Crop(int64_t offset, uint32_t length) {  // offset < 0 pads
    b += a * static_cast<double>(offset);
    c0 = std::max<int64_t>(c0 - offset, 0);
    c1 = std::min<int64_t>(c1 - offset, length);
    size = length;
  }
  void Mirror() {
    b += a * size;
    a = -a;
    const int64_t old0 = c0;
    c0 = size - c1;
    c1 = size - old0;
  }
};

// torchvision's center_crop offset on one axis: negative when the image is zero-padded.
int64_t CenterOffset(uint32_t size, uint32_t target) {
  if (target > size) return -static_cast<int64_t>((target - size) / 2);
  return PyRound((size - target) / 2.0);
}

Status RequireUnpadded(const Axis& x, const Axis& y, const Op& op) {
  if (x.full() && y.full()) return Status::OK();
  return InvalidArgument(OpToString(op) +
                         " after a CenterCrop that padded the image is not supported");
}

}  // namespace

std::string OpToString(const Op& op) {
  return std::visit(
      Overloaded{
          [](const RandomResizedCrop& o) {
            return Fmt("RandomResizedCrop(size=(%g, %g), ", o.height, o.width) +
                   Fmt("scale=(%g, %g), ", o.scale_min, o.scale_max) +
                   Fmt("ratio=(%g, %g))", o.ratio_min, o.ratio_max);
          },
          [](const Resize& o) {
            return o.shorter_side != 0 ? Fmt("Resize(%g)", o.shorter_side)
                                       : Fmt("Resize((%g, %g))", o.height, o.width);
          },
          [](const CenterCrop& o) { return Fmt("CenterCrop((%g, %g))", o.height, o.width); },
          [](const RandomHorizontalFlip& o) { return Fmt("RandomHorizontalFlip(p=%g)", o.p); },
          [](const Normalize& o) {
            return Fmt("Normalize(mean=(%g, %g, %g), ", o.mean[0], o.mean[1], o.mean[2]) +
                   Fmt("std=(%g, %g, %g))", o.std[0], o.std[1], o.std[2]);
          },
      },
      op);
}

CropWindow SampleRandomResizedCrop(uint32_t width, uint32_t height, const RandomResizedCrop& op,
                                   SampleRng& rng) {
  const double area = static_cast<double>(width) * height;
  const double log_ratio_min = std::log(op.ratio_min);
  const double log_ratio_max = std::log(op.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.Uniform(op.scale_min, op.scale_max);
    const double aspect = std::exp(rng.Uniform(log_ratio_min, log_ratio_max));
    const int64_t w = PyRound(std::sqrt(target_area * aspect));
    const int64_t h = PyRound(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      CropWindow window;
      window.height = static_cast<uint32_t>(h);
      window.width = static_cast<uint32_t>(w);
      window.top = static_cast<uint32_t>(rng.UniformInt(height - h + 1));
      window.left = static_cast<uint32_t>(rng.UniformInt(width - w + 1));
      return window;
    }
  }
  // Fallback: the whole image, cut down to the nearest allowed aspect ratio, centred.
  const double in_ratio = static_cast<double>(width) / height;
  int64_t w = width, h = height;
  if (in_ratio < op.ratio_min) {
    h = PyRound(w / op.ratio_min);
  } else if (in_ratio > op.ratio_max) {
    w = PyRound(h * op.ratio_max);
  }
  CropWindow window;
  window.height = static_cast<uint32_t>(std::clamp<int64_t>(h, 0, height));
  window.width = static_cast<uint32_t>(std::clamp<int64_t>(w, 0, width));
  window.top = (height - window.height) / 2;
  window.left = (width - window.width) / 2;
  return window;
}

Result<CropPlan> PlanCrop(const std::vector<Op>& ops, uint32_t width, uint32_t height,
                          SampleRng& rng) {
  Axis x{width, 1.0, 0.0, 0, width};
  Axis y{height, 1.0, 0.0, 0, height};
  for (const Op& op : ops) {
    if (const auto* o = std::get_if<RandomResizedCrop>(&op)) {
      SLUICE_RETURN_IF_ERROR(RequireUnpadded(x, y, op));
      const CropWindow win = SampleRandomResizedCrop(x.size, y.size, *o, rng);
      if (win.width == 0 || win.height == 0) {
        return InvalidArgument(OpToString(op) + " leaves nothing of a " + std::to_string(x.size) +
                               "x" + std::to_string(y.size) + " image");
      }
      x.Crop(win.left, win.width);
      y.Crop(win.top, win.height);
      x.Scale(o->width);
      y.Scale(o->height);
    } else if (const auto* o = std::get_if<Resize>(&op)) {
      SLUICE_RETURN_IF_ERROR(RequireUnpadded(x, y, op));
      uint32_t new_w = o->width, new_h = o->height;
      if (o->shorter_side != 0) {
        const bool portrait = x.size <= y.size;
        const uint32_t shorter = portrait ? x.size : y.size;
        const uint32_t longer = portrait ? y.size : x.size;
        const auto new_long =
            static_cast<uint32_t>(static_cast<double>(o->shorter_side) * longer / shorter);
        new_w = portrait ? o->shorter_side : new_long;
        new_h = portrait ? new_long : o->shorter_side;
      }
      if (new_w == 0 || new_h == 0) {
        return InvalidArgument(OpToString(op) + " makes a " + std::to_string(x.size) + "x" +
                               std::to_string(y.size) + " image empty");
      }
      x.Scale(new_w);
      y.Scale(new_h);
    } else if (const auto* o = std::get_if<CenterCrop>(&op)) {
      x.Crop(CenterOffset(x.size, o->width), o->width);
      y.Crop(CenterOffset(y.size, o->height), o->height);
      if (x.c1 <= x.c0 || y.c1 <= y.c0) {
        return InvalidArgument(OpToString(op) + " leaves nothing of the image");
      }
    } else if (const auto* o = std::get_if<RandomHorizontalFlip>(&op)) {
      if (rng.Bernoulli(o->p)) x.Mirror();
    }
  }
  CropPlan plan;
  plan.flip = x.a < 0;
  const double xa = x.a * x.c0 + x.b, xb = x.a * x.c1 + x.b;
  plan.box_x0 = std::clamp(std::min(xa, xb), 0.0, static_cast<double>(width));
  plan.box_x1 = std::clamp(std::max(xa, xb), 0.0, static_cast<double>(width));
  plan.box_y0 = std::clamp(y.a * y.c0 + y.b, 0.0, static_cast<double>(height));
  plan.box_y1 = std::clamp(y.a * y.c1 + y.b, 0.0, static_cast<double>(height));
  plan.canvas_width = x.size;
  plan.canvas_height = y.size;
  plan.content_x = static_cast<uint32_t>(x.c0);
  plan.content_y = static_cast<uint32_t>(y.c0);
  plan.content_width = static_cast<uint32_t>(x.c1 - x.c0);
  plan.content_height = static_cast<uint32_t>(y.c1 - y.c0);
  if (!(plan.box_x1 > plan.box_x0 && plan.box_y1 > plan.box_y0)) {
    return InvalidArgument("the ops leave an empty box of the source image");
  }
  return plan;
}

}  // namespace sluice::vision

#include "sluice/vision/transform.h"

#include <cmath>
#include <optional>

#include "sluice/vision/resample.h"
#include "vision/slot_writer.h"

namespace sluice::vision {

struct DecodeScratch::Buffers {
  ImageDecoder decoder;
  DecodeInterrupt interrupt;
  Resampler resampler;
  ResampleAxis horizontal, vertical;
  internal::SlotRows rows;
};

DecodeScratch::DecodeScratch() : buffers_(std::make_unique<Buffers>()) {}
DecodeScratch::~DecodeScratch() = default;
DecodeScratch::DecodeScratch(DecodeScratch&&) noexcept = default;
DecodeScratch& DecodeScratch::operator=(DecodeScratch&&) noexcept = default;
void DecodeScratch::set_interrupt(DecodeInterrupt interrupt) { buffers_->interrupt = interrupt; }

bool IsImageDType(DType dtype) {
  return dtype == DType::kUInt8 || dtype == DType::kFloat16 || dtype == DType::kFloat32;
}

std::string_view LayoutName(Layout layout) { return layout == Layout::kNHWC ? "NHWC" : "NCHW"; }

Result<DType> ParseImageDType(std::string_view name) {
  for (DType d : {DType::kUInt8, DType::kFloat16, DType::kFloat32}) {
    if (name == DTypeName(d)) return d;
  }
  return InvalidArgument("unknown dtype '" + std::string(name) +
                         "' (expected uint8, float16 or float32)");
}

Result<Layout> ParseLayout(std::string_view name) {
  for (Layout l : {Layout::kNHWC, Layout::kNCHW}) {
    if (name == LayoutName(l)) return l;
  }
  return InvalidArgument("unknown layout '" + std::string(name) + "' (expected NHWC or NCHW)");
}

namespace {

Status ValidateOp(const Op& op) {
  auto bad = [&](const char* why) { return InvalidArgument(OpToString(op) + ": " + why); };
  if (const auto* o = std::get_if<RandomResizedCrop>(&op)) {
    if (o->height == 0 || o->width == 0) return bad("size must be positive");
    if (!(o->scale_min > 0 && o->scale_min <= o->scale_max)) {
      return bad("scale must satisfy 0 < min <= max");
    }
    if (!(o->ratio_min > 0 && o->ratio_min <= o->ratio_max)) {
      return bad("ratio must satisfy 0 < min <= max");
    }
  } else if (const auto* o = std::get_if<Resize>(&op)) {
    if (o->shorter_side == 0 && (o->height == 0 || o->width == 0)) {
      return bad("give the shorter side, or both height and width");
    }
  } else if (const auto* o = std::get_if<CenterCrop>(&op)) {
    if (o->height == 0 || o->width == 0) return bad("size must be positive");
  } else if (const auto* o = std::get_if<RandomHorizontalFlip>(&op)) {
    if (!(o->p >= 0 && o->p <= 1)) return bad("p must be in [0, 1]");
  } else if (const auto* o = std::get_if<Normalize>(&op)) {
    for (float s : o->std) {
      if (!(s != 0 && std::isfinite(s))) return bad("std must be finite and non-zero");
    }
  }
  return Status::OK();
}

// The output size after the ops, when it does not depend on the image.
std::optional<std::array<uint32_t, 2>> StaticSize(const std::vector<Op>& ops) {
  std::optional<std::array<uint32_t, 2>> size;  // {height, width}
  for (const Op& op : ops) {
    if (const auto* o = std::get_if<RandomResizedCrop>(&op)) size = {o->height, o->width};
    if (const auto* o = std::get_if<CenterCrop>(&op)) size = {o->height, o->width};
    if (const auto* o = std::get_if<Resize>(&op)) {
      if (o->shorter_side != 0) {
        size.reset();
      } else {
        size = {o->height, o->width};
      }
    }
  }
  return size;
}

}  // namespace

uint32_t ChooseDctScale(const CropPlan& plan) {
  // Keeping the scaled box >= the output means the antialiasing filter still spans every
  // output pixel's footprint, so quality stays within the Pillow tolerance.
  const double box_w = plan.box_x1 - plan.box_x0, box_h = plan.box_y1 - plan.box_y0;
  for (uint32_t denom : {8u, 4u, 2u}) {
    if (box_w / denom >= plan.content_width && box_h / denom >= plan.content_height) return denom;
  }
  return 1;
}

Result<ImageTransform> ImageTransform::Make(std::vector<Op> ops, OutputSpec output,
                                            TransformOptions options) {
  if (!IsImageDType(output.dtype)) {
    return InvalidArgument("image output dtype must be uint8, float16 or float32, not " +
                           std::string(DTypeName(output.dtype)));
  }
  ImageTransform t;
  // ToTensor: pixel / 255; then each Normalize composes (v - mean) / std.
  t.scale_ = {1.0f / 255, 1.0f / 255, 1.0f / 255};
  t.bias_ = {0, 0, 0};
  t.pad_ = {0, 0, 0};
  for (const Op& op : ops) {
    SLUICE_RETURN_IF_ERROR(ValidateOp(op));
    if (std::holds_alternative<CenterCrop>(op)) t.pad_ = {0, 0, 0};
    if (const auto* n = std::get_if<Normalize>(&op)) {
      if (output.dtype == DType::kUInt8) {
        return InvalidArgument(OpToString(op) + " needs a float output dtype, not uint8");
      }
      for (int c = 0; c < 3; ++c) {
        t.scale_[c] /= n->std[c];
        t.bias_[c] = (t.bias_[c] - n->mean[c]) / n->std[c];
        t.pad_[c] = (t.pad_[c] - n->mean[c]) / n->std[c];
      }
    }
  }
  auto size = StaticSize(ops);
  if (!size) {
    return InvalidArgument(
        "the output size would depend on the image: end the size-changing ops with "
        "RandomResizedCrop, CenterCrop or Resize((height, width)) so samples can be batched");
  }
  t.height_ = (*size)[0];
  t.width_ = (*size)[1];
  t.ops_ = std::move(ops);
  t.output_ = output;
  t.options_ = options;
  return t;
}

std::array<uint32_t, 3> ImageTransform::output_shape() const {
  if (output_.layout == Layout::kNCHW) return {3, height_, width_};
  return {height_, width_, 3};
}

Result<ImageHeader> ImageTransform::Open(ByteView encoded, DecodeScratch* scratch) const {
  DecodeScratch::Buffers& b = *scratch->buffers_;
  DecodeOptions options = options_.decode;
  options.interrupt = b.interrupt;
  b.decoder.set_options(options);
  return b.decoder.Open(encoded);
}

Status ImageTransform::Apply(ByteView encoded, SampleRng& rng, void* out,
                             DecodeScratch* scratch) const {
  SLUICE_ASSIGN_OR_RETURN(ImageHeader header, Open(encoded, scratch));
  SLUICE_ASSIGN_OR_RETURN(CropPlan plan, PlanCrop(ops_, header.width, header.height, rng));
  return RenderOpened(header, plan, out, scratch);
}

Status ImageTransform::Render(ByteView encoded, const CropPlan& plan, void* out,
                              DecodeScratch* scratch) const {
  SLUICE_ASSIGN_OR_RETURN(ImageHeader header, Open(encoded, scratch));
  return RenderOpened(header, plan, out, scratch);
}

Status ImageTransform::RenderOpened(const ImageHeader& header, const CropPlan& plan, void* out,
                                    DecodeScratch* scratch) const {
  if (plan.canvas_width != width_ || plan.canvas_height != height_ || plan.content_width == 0 ||
      plan.content_x + plan.content_width > width_ || plan.content_height == 0 ||
      plan.content_y + plan.content_height > height_ ||
      !(plan.box_x0 >= 0 && plan.box_x1 <= header.width && plan.box_x0 < plan.box_x1) ||
      !(plan.box_y0 >= 0 && plan.box_y1 <= header.height && plan.box_y0 < plan.box_y1)) {
    return InvalidArgument("crop plan does not fit the image or the output");
  }
  DecodeScratch::Buffers& b = *scratch->buffers_;
  const uint32_t denom =
      header.format == ImageFormat::kJpeg && options_.dct_scaling ? ChooseDctScale(plan) : 1;
  const uint32_t scaled_w = (header.width + denom - 1) / denom;
  const uint32_t scaled_h = (header.height + denom - 1) / denom;
  b.horizontal.Compute(scaled_w, plan.box_x0 / denom, plan.box_x1 / denom, plan.content_width);
  b.vertical.Compute(scaled_h, plan.box_y0 / denom, plan.box_y1 / denom, plan.content_height);

  // Two spare columns on each side: libjpeg treats the edges of a column crop as image edges
  // when upsampling chroma, which would otherwise change the outermost used columns.
  constexpr int32_t kMargin = 2;
  DecodeRequest request;
  request.scale_denom = denom;
  request.x = static_cast<uint32_t>(std::max(b.horizontal.lo() - kMargin, 0));
  request.width = std::min<uint32_t>(b.horizontal.hi() + kMargin, scaled_w) - request.x;
  request.y = static_cast<uint32_t>(b.vertical.lo());
  request.height = static_cast<uint32_t>(b.vertical.hi() - b.vertical.lo());
  DecodedImage image;
  SLUICE_RETURN_IF_ERROR(b.decoder.Decode(request, &image));
  if (image.full_width != scaled_w || image.full_height != scaled_h) {
    return Internal("decoder scaled the image to " + std::to_string(image.full_width) + "x" +
                    std::to_string(image.full_height) + ", expected " + std::to_string(scaled_w) +
                    "x" + std::to_string(scaled_h));
  }
  b.horizontal.Shift(image.x);
  b.vertical.Shift(image.y);
  if (b.horizontal.lo() < 0 || b.horizontal.hi() > static_cast<int32_t>(image.width) ||
      b.vertical.lo() < 0 || b.vertical.hi() > static_cast<int32_t>(image.height)) {
    return Internal("decoded region does not cover the resampling footprint");
  }
  internal::SlotWriter writer(output_, internal::PixelMap{scale_, bias_, pad_}, plan, out, &b.rows);
  if (plan.padded()) writer.FillPadding();
  b.resampler.Run(image.pixels, image.stride, b.horizontal, b.vertical, &writer);
  internal::FinishSlot();
  return Status::OK();
}

}  // namespace sluice::vision

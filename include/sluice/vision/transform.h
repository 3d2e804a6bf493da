// ImageTransform: decode + augment one encoded image straight into a batch slot.
//
// This is the kernel the pipeline's decode_image stage wraps:
//
//   auto t = ImageTransform::Make({RandomResizedCrop{}, RandomHorizontalFlip{},
//                                  Normalize{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}},
//                                 OutputSpec{DType::kFloat32, Layout::kNCHW});
//   // per worker thread:
//   DecodeScratch scratch;
//   // per sample:
//   SampleRng rng = SampleRng::ForSample(seed, epoch, global_index);
//   Status s = t->Apply(bytes, rng, batch + i * t->output_bytes(), &scratch);
//
// Apply reads the header, plans the crop (PlanCrop), picks the JPEG DCT scale that keeps the
// scaled crop at least as large as the output, decodes only the rows and columns the resize
// needs, resamples (antialiased bilinear, as Pillow) and writes the requested dtype and layout
// with normalisation fused into that final write. It allocates nothing once the scratch
// buffers have grown to the largest image seen. See docs/vision.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/random.h"
#include "sluice/base/status.h"
#include "sluice/pipeline/tensor.h"
#include "sluice/vision/decode.h"
#include "sluice/vision/ops.h"

namespace sluice::vision {

// An image's dtype is its batch tensor's (the pipeline's DType); images are written as
// uint8, float16 or float32 (ImageTransform::Make refuses the others).
using DType = pipeline::DType;
using pipeline::DTypeName;
using pipeline::DTypeSize;
enum class Layout { kNHWC, kNCHW };

bool IsImageDType(DType dtype);              // uint8, float16 or float32
std::string_view LayoutName(Layout layout);  // "NHWC", "NCHW"
// "uint8", "float16" or "float32"; anything else is InvalidArgument.
Result<DType> ParseImageDType(std::string_view name);
Result<Layout> ParseLayout(std::string_view name);

// How one sample is written into its batch slot. The layout names the batch tensor: a slot is
// C x H x W (NCHW) or H x W x C (NHWC), C = 3 (RGB). uint8 holds the resampled pixel rounded
// to 0..255; float dtypes hold ToTensor's pixel / 255, then any Normalize.
struct OutputSpec {
  DType dtype = DType::kFloat32;  // Default: float32
  Layout layout = Layout::kNCHW;  // Default: NCHW (PyTorch's)
};

struct TransformOptions {
  DecodeOptions decode;  // Default: DecodeOptions's defaults (Pillow's pixel cap, ...)
  // Decode JPEGs at 1/2, 1/4 or 1/8 scale when the crop stays at least as large as the
  // output: much faster for large photos, within the Pillow tolerance. Default: true.
  bool dct_scaling = true;
};

// The JPEG DCT scale denominator (1, 2, 4 or 8) Apply uses for `plan`: the largest that keeps
// the scaled box at least as large as the content it is resized into.
uint32_t ChooseDctScale(const CropPlan& plan);

// Per-thread reusable state: the decoder (libjpeg/libpng state, pixel buffer) and the
// resampler's rows and coefficients. Not thread-safe; one per worker thread, shared by any
// number of ImageTransforms.
class DecodeScratch {
 public:
  DecodeScratch();
  ~DecodeScratch();
  DecodeScratch(DecodeScratch&&) noexcept;
  DecodeScratch& operator=(DecodeScratch&&) noexcept;

  // The check the decodes made with this scratch poll (DecodeOptions::interrupt), until set
  // again. Default: none.
  void set_interrupt(DecodeInterrupt interrupt);

  struct Buffers;

 private:
  friend class ImageTransform;
  std::unique_ptr<Buffers> buffers_;
};

class ImageTransform {
 public:
  // Validates `ops` (ranges, a Normalize needs a float dtype, the output size must not depend
  // on the image: the last size-changing op is RandomResizedCrop, CenterCrop or
  // Resize((h, w))).
  static Result<ImageTransform> Make(std::vector<Op> ops, OutputSpec output = {},
                                     TransformOptions options = {});

  // Decodes `encoded` (JPEG or PNG), applies the ops with randomness from `rng`, and writes
  // output_bytes() bytes at `out`, which must be aligned to the dtype's size. Errors: DataLoss
  // (corrupt or truncated data, naming the byte offset), InvalidArgument (unsupported format),
  // ResourceExhausted (pixel or memory cap). On error `out` may be partly written.
  // Thread-safe (const) given one scratch per thread.
  Status Apply(ByteView encoded, SampleRng& rng, void* out, DecodeScratch* scratch) const;

  // Decodes and renders an already planned crop (Apply = header + PlanCrop + Render).
  Status Render(ByteView encoded, const CropPlan& plan, void* out, DecodeScratch* scratch) const;

  // The slot's shape in the output layout: {3, H, W} for NCHW, {H, W, 3} for NHWC.
  std::array<uint32_t, 3> output_shape() const;
  size_t output_bytes() const { return size_t{height_} * width_ * 3 * DTypeSize(output_.dtype); }
  const std::vector<Op>& ops() const { return ops_; }
  const OutputSpec& output() const { return output_; }

 private:
  ImageTransform() = default;
  Result<ImageHeader> Open(ByteView encoded, DecodeScratch* scratch) const;
  Status RenderOpened(const ImageHeader& header, const CropPlan& plan, void* out,
                      DecodeScratch* scratch) const;

  std::vector<Op> ops_;
  OutputSpec output_;
  TransformOptions options_;
  uint32_t height_ = 0, width_ = 0;
  // Final write: value = pixel * scale[c] + bias[c] (pixel on the 0..255 scale); padding
  // gets pad[c] (zero passed through the Normalizes that follow the padding CenterCrop).
  std::array<float, 3> scale_{}, bias_{}, pad_{};
};

}  // namespace sluice::vision

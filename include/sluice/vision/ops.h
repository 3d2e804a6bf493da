// Augmentation ops with torchvision semantics (torchvision 0.14 with PIL images), and the
// geometry planner that folds a list of them into one crop box + output size per sample.
//
// Every geometric op is folded into a single resampling from the source image: `Resize(256),
// CenterCrop(224)` becomes one antialiased resize of the box of the source that the crop
// selects, which is exactly what torchvision computes in two steps (Pillow's filter is
// evaluated at the same centres). `RandomResizedCrop` after a `Resize` is resampled once
// instead of twice (torchvision's double resampling differs slightly; ours is the sharper).
// docs/vision.md documents each op and every deviation from torchvision.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "sluice/base/random.h"
#include "sluice/base/status.h"

namespace sluice::vision {

// torchvision.transforms.RandomResizedCrop(size, scale, ratio) with bilinear, antialiased
// resizing: a random box of the image (area fraction in `scale`, aspect ratio in `ratio`,
// 10 attempts, then a centre crop) resized to height x width.
struct RandomResizedCrop {
  uint32_t height = 224;         // Default: 224
  uint32_t width = 224;          // Default: 224
  double scale_min = 0.08;       // Default: 0.08
  double scale_max = 1.0;        // Default: 1.0
  double ratio_min = 3.0 / 4.0;  // Default: 3/4
  double ratio_max = 4.0 / 3.0;  // Default: 4/3
};

// torchvision.transforms.Resize: `shorter_side` != 0 scales the shorter side to it, keeping
// the aspect ratio (the longer side is truncated, as torchvision does); otherwise the image
// becomes exactly height x width.
struct Resize {
  uint32_t shorter_side = 0;  // Default: 0 (use height x width)
  uint32_t height = 0;
  uint32_t width = 0;
};

// torchvision.transforms.CenterCrop: the centred height x width window; an image smaller than
// the window is zero-padded (before Normalize, if Normalize comes later), as torchvision does.
struct CenterCrop {
  uint32_t height = 224;  // Default: 224
  uint32_t width = 224;   // Default: 224
};

// torchvision.transforms.RandomHorizontalFlip(p).
struct RandomHorizontalFlip {
  double p = 0.5;  // Default: 0.5
};

// torchvision.transforms.Normalize(mean, std) applied to ToTensor's [0, 1] values:
// out = (pixel / 255 - mean) / std. Needs a float output dtype.
struct Normalize {
  std::array<float, 3> mean = {0.0f, 0.0f, 0.0f};
  std::array<float, 3> std = {1.0f, 1.0f, 1.0f};
};

using Op = std::variant<RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip, Normalize>;

// "RandomResizedCrop(224)", "Normalize(mean=(0.485,...), std=(...))": for messages.
std::string OpToString(const Op& op);

// A window of integer pixels, as torchvision's get_params returns it.
struct CropWindow {
  uint32_t top = 0, left = 0, height = 0, width = 0;
};

// torchvision's RandomResizedCrop.get_params on a width x height image, drawing from `rng`:
// up to 10 attempts of (area uniform in scale * area, log-ratio uniform in log(ratio)), each
// accepted when the rounded window fits; then the centre-crop fallback clamped to `ratio`.
CropWindow SampleRandomResizedCrop(uint32_t width, uint32_t height, const RandomResizedCrop& op,
                                   SampleRng& rng);

// What one sample's ops make of its source image: the box of the source (full-resolution
// pixel coordinates, fractional like Pillow's resize box) that is resampled into the content
// rectangle of the output canvas; the rest of the canvas is padding. `flip` mirrors the
// content horizontally.
struct CropPlan {
  double box_x0 = 0, box_y0 = 0, box_x1 = 0, box_y1 = 0;
  uint32_t canvas_width = 0, canvas_height = 0;
  uint32_t content_x = 0, content_y = 0, content_width = 0, content_height = 0;
  bool flip = false;

  bool padded() const { return content_width != canvas_width || content_height != canvas_height; }
};

// Runs the geometric ops of `ops` on a width x height source, drawing randomness in op order.
// Fails (InvalidArgument) when an op cannot be folded: a Resize or RandomResizedCrop after a
// CenterCrop that had to pad, or a geometry that leaves nothing of the image.
Result<CropPlan> PlanCrop(const std::vector<Op>& ops, uint32_t width, uint32_t height,
                          SampleRng& rng);

}  // namespace sluice::vision

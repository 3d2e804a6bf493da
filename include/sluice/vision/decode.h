// Image decoding from memory: JPEG (libjpeg-turbo's libjpeg API) and PNG (libpng) into RGB8.
//
// The decoder is built for the training hot path: it reads the header first, so the caller
// can decide what it actually needs (a crop box, a size), and then decodes only that: JPEG
// with DCT-domain downscaling (1/2, 1/4, 1/8) and only the rows and columns of the region
// (jpeg_crop_scanline / jpeg_skip_scanlines). Buffers are reused across images; an
// ImageDecoder belongs to one thread. See docs/vision.md.
//
// Bad input never crashes or hangs: corrupt, truncated or unsupported data returns DataLoss /
// InvalidArgument naming the byte offset in the encoded buffer where decoding failed; images
// whose header promises more than the caps return ResourceExhausted before anything is
// allocated. libjpeg's corrupt-data warnings are errors, never silently patched pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/vision/image_info.h"

namespace sluice::vision {

// ImageFormat, ImageFormatName, DetectImageFormat and kMaxImagePixels come from
// image_info.h (shared with InspectImage).

// A check that a long decode polls (every few rows, between the scans of a progressive
// JPEG): a non-OK status aborts the decode with that status. How a pipeline's cancellation
// and Ctrl-C reach a decode that takes a second or more (an 81-megapixel photo).
// A plain function pointer: no allocation per image.
struct DecodeInterrupt {
  Status (*check)(const void* arg) = nullptr;
  const void* arg = nullptr;
  Status Check() const { return check == nullptr ? Status::OK() : check(arg); }
};

struct DecodeOptions {
  // Largest width * height accepted, checked from the header. Default: 89,478,485 (Pillow's
  // Image.MAX_IMAGE_PIXELS, which makes the same image fail in torchvision and in sluice).
  uint64_t max_pixels = kMaxImagePixels;
  // Largest decoder working memory for one image: the decoded region plus libjpeg's buffers
  // (a progressive JPEG keeps all DCT coefficients: 2 bytes per sample). Default: 1 GiB.
  uint64_t max_decoded_bytes = uint64_t{1} << 30;
  // Most scans a progressive JPEG may have: a few KB of crafted scans can otherwise cost
  // minutes of CPU (libjpeg-turbo's "scan bomb" advisory). Default: 500 (TurboJPEG's limit).
  uint32_t max_scans = 500;
  // Polled while decoding. Default: none.
  DecodeInterrupt interrupt;
};

struct ImageHeader {
  ImageFormat format = ImageFormat::kOther;
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 0;     // in the file: 1 gray, 2 gray+alpha, 3 RGB/YCbCr, 4 CMYK/RGBA
  bool progressive = false;  // progressive JPEG or interlaced PNG: needs whole-image buffers
};

// Which part of the image to decode, and at which scale.
struct DecodeRequest {
  // JPEG DCT-domain downscale: the image is decoded at ceil(width / scale_denom) x
  // ceil(height / scale_denom). 1, 2, 4 or 8; PNG supports only 1. Default: 1.
  uint32_t scale_denom = 1;
  // The region wanted, in pixels of the scaled image: [x, x + width) x [y, y + height).
  // width == 0 means the whole image. The decoder may return a larger region (JPEG crops on
  // MCU boundaries); DecodedImage says which one.
  uint32_t x = 0, y = 0, width = 0, height = 0;
};

// Packed RGB8 pixels of a region of the (scaled) image. Views the decoder's buffer: valid
// until the decoder's next Open().
struct DecodedImage {
  const uint8_t* pixels = nullptr;
  size_t stride = 0;                         // bytes from one row to the next (>= 3 * width)
  uint32_t width = 0, height = 0;            // of the region
  uint32_t x = 0, y = 0;                     // region origin in the scaled image
  uint32_t full_width = 0, full_height = 0;  // the scaled image
  uint32_t scale_denom = 1;

  const uint8_t* row(uint32_t r) const { return pixels + r * stride; }
};

// Decodes one image at a time, reusing its buffers and codec state across images.
// Threading: not thread-safe; use one per worker thread.
class ImageDecoder {
 public:
  explicit ImageDecoder(DecodeOptions options = {});
  ~ImageDecoder();
  ImageDecoder(ImageDecoder&&) noexcept;
  ImageDecoder& operator=(ImageDecoder&&) noexcept;

  // Parses the header of `encoded`, which must stay alive and unchanged until the next
  // Open(). Applies the pixel cap.
  Result<ImageHeader> Open(ByteView encoded);

  // Decodes the region of the image opened last. Call at most once per Open().
  Status Decode(const DecodeRequest& request, DecodedImage* out);

  // Open + Decode of the whole image at full scale.
  Status DecodeAll(ByteView encoded, DecodedImage* out);

  const DecodeOptions& options() const;
  // Applies from the next Open() on.
  void set_options(const DecodeOptions& options);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::vision

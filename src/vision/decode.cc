#include "sluice/vision/decode.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "vision/codec.h"

namespace sluice::vision {
namespace internal {

bool ClampRegion(const DecodeRequest& request, uint32_t full_width, uint32_t full_height,
                 Region* region) {
  if (request.width == 0) {
    *region = Region{0, 0, full_width, full_height};
    return full_width > 0 && full_height > 0;
  }
  if (request.x >= full_width || request.y >= full_height || request.height == 0) return false;
  region->x = request.x;
  region->y = request.y;
  region->width = std::min(request.width, full_width - request.x);
  region->height = std::min(request.height, full_height - request.y);
  return true;
}

std::string AtByte(std::string_view format, size_t offset, size_t size, std::string_view what) {
  return std::string(format) + " at byte " + std::to_string(offset) + " of " +
         std::to_string(size) + ": " + std::string(what);
}

Status CheckPixelCap(std::string_view format, uint64_t width, uint64_t height,
                     const DecodeOptions& options) {
  if (width == 0 || height == 0) {
    return DataLoss(std::string(format) + ": image has zero width or height");
  }
  if (width * height > options.max_pixels) {
    return ResourceExhausted(std::string(format) + ": " + std::to_string(width) + "x" +
                             std::to_string(height) + " image exceeds the pixel cap of " +
                             std::to_string(options.max_pixels) + " (DecodeOptions::max_pixels)");
  }
  return Status::OK();
}

Status CheckByteCap(std::string_view format, std::string_view what, uint64_t bytes,
                    const DecodeOptions& options) {
  if (bytes > options.max_decoded_bytes) {
    return ResourceExhausted(std::string(format) + ": " + std::string(what) + " of " +
                             std::to_string(bytes) + " bytes exceeds the cap of " +
                             std::to_string(options.max_decoded_bytes) +
                             " (DecodeOptions::max_decoded_bytes)");
  }
  return Status::OK();
}

}  // namespace internal

namespace {

// For the error message of an unsupported format: what the bytes look like.
std::string_view GuessOtherFormat(ByteView b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts("GIF8")) return "GIF";
  if (starts("BM")) return "BMP";
  if (b.size() >= 12 && starts("RIFF") && b.substr(8, 4) == "WEBP") return "WebP";
  if (starts("II*") || starts("MM\0*")) return "TIFF";
  if (b.size() >= 12 && b.substr(4, 4) == "ftyp") return "HEIF/AVIF";
  return "";
}

}  // namespace

class ImageDecoder::Impl {
 public:
  explicit Impl(DecodeOptions options)
      : options(options), jpeg(this->options), png(this->options) {}

  DecodeOptions options;
  internal::JpegCodec jpeg;
  internal::PngCodec png;
  internal::PixelBuffer pixels;
  ImageFormat open_format = ImageFormat::kOther;
};

ImageDecoder::ImageDecoder(DecodeOptions options) : impl_(std::make_unique<Impl>(options)) {}
ImageDecoder::~ImageDecoder() = default;
ImageDecoder::ImageDecoder(ImageDecoder&&) noexcept = default;
ImageDecoder& ImageDecoder::operator=(ImageDecoder&&) noexcept = default;

Result<ImageHeader> ImageDecoder::Open(ByteView encoded) {
  impl_->open_format = ImageFormat::kOther;
  if (encoded.empty()) return DataLoss("image: empty input (0 bytes)");
  const ImageFormat format = DetectImageFormat(encoded);
  if (format == ImageFormat::kOther) {
    std::string_view other = GuessOtherFormat(encoded);
    return InvalidArgument("image: unsupported format" +
                           (other.empty() ? std::string(" (unrecognised magic bytes)")
                                          : " (" + std::string(other) + ")") +
                           "; sluice decodes JPEG and PNG");
  }
  Result<ImageHeader> header =
      format == ImageFormat::kJpeg ? impl_->jpeg.Open(encoded) : impl_->png.Open(encoded);
  if (header.ok()) impl_->open_format = format;
  return header;
}

Status ImageDecoder::Decode(const DecodeRequest& request, DecodedImage* out) {
  const ImageFormat format = impl_->open_format;
  impl_->open_format = ImageFormat::kOther;
  switch (format) {
    case ImageFormat::kJpeg:
      return impl_->jpeg.Decode(request, &impl_->pixels, out);
    case ImageFormat::kPng:
      return impl_->png.Decode(request, &impl_->pixels, out);
    case ImageFormat::kOther:
      break;
  }
  return FailedPrecondition("image: Decode without a successful Open");
}

const DecodeOptions& ImageDecoder::options() const { return impl_->options; }
void ImageDecoder::set_options(const DecodeOptions& options) { impl_->options = options; }

Status ImageDecoder::DecodeAll(ByteView encoded, DecodedImage* out) {
  SLUICE_RETURN_IF_ERROR(Open(encoded).status());
  return Decode(DecodeRequest{}, out);
}

}  // namespace sluice::vision

// InspectImage: JPEG through libjpeg-turbo's TurboJPEG API, PNG through libpng's simplified
// API. Both libraries report errors through their own setjmp/longjmp inside C code, so no
// error unwinds through C++ frames here.
#include "sluice/vision/image_info.h"

#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <memory>
#include <string>

namespace sluice::vision {
namespace {

constexpr unsigned char kJpegMagic[] = {0xff, 0xd8, 0xff};
constexpr unsigned char kPngMagic[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

bool StartsWith(ByteView bytes, const unsigned char* magic, size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

const unsigned char* Bytes(ByteView v) { return reinterpret_cast<const unsigned char*>(v.data()); }

Status CheckPixels(std::string_view format, uint64_t width, uint64_t height) {
  if (width == 0 || height == 0) {
    return DataLoss(std::string(format) + " header gives an empty image (" + std::to_string(width) +
                    "x" + std::to_string(height) + ")");
  }
  if (width * height > kMaxImagePixels) {
    return ResourceExhausted(std::string(format) + " of " + std::to_string(width) + "x" +
                             std::to_string(height) + " pixels exceeds the cap of " +
                             std::to_string(kMaxImagePixels) + " pixels");
  }
  return Status::OK();
}

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};

// One decompressor per thread: creating one costs an allocation of libjpeg's state, and a
// handle must not be shared between threads. Every JPEG this thread inspects goes through it.
std::unique_ptr<void, TjDeleter>& ThreadHandle() {
  thread_local std::unique_ptr<void, TjDeleter> handle(tjInitDecompress());
  return handle;
}

Result<tjhandle> ThreadDecompressor() {
  std::unique_ptr<void, TjDeleter>& handle = ThreadHandle();
  if (handle == nullptr) handle.reset(tjInitDecompress());
  if (handle == nullptr)
    return Internal(std::string("tjInitDecompress: ") + tjGetErrorStr2(nullptr));
  return handle.get();
}

// The error of a failed TurboJPEG call, after which the thread's decompressor is replaced: a
// failed call may leave it mid-image (tjDecompressHeader3 returns from libjpeg's error
// longjmp without aborting the decompression), and the next image would then fail with "two
// SOI markers" although it is valid.
Status JpegError(tjhandle tj, const char* step) {
  Status error = DataLoss(std::string("JPEG ") + step + ": " + tjGetErrorStr2(tj));
  ThreadHandle().reset();
  return error;
}

Result<ImageInfo> InspectJpeg(ByteView bytes, bool full_decode) {
  SLUICE_ASSIGN_OR_RETURN(tjhandle tj, ThreadDecompressor());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, Bytes(bytes), bytes.size(), &width, &height, &subsampling,
                          &colorspace) != 0) {
    return JpegError(tj, "header");
  }
  SLUICE_RETURN_IF_ERROR(CheckPixels("JPEG", width, height));
  bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  ImageInfo info{ImageFormat::kJpeg, static_cast<uint32_t>(width), static_cast<uint32_t>(height),
                 colorspace == TJCS_GRAY ? 1u
                 : cmyk                  ? 4u
                                         : 3u};
  if (!full_decode) return info;

  // Damage shows up while entropy-decoding the scans, which libjpeg does for every
  // component at any output scale. Decoding at 1/8 scale into one channel (CMYK data cannot
  // be converted to gray) still reads every coefficient but skips most of the IDCT and all
  // colour conversion, which makes validation several times cheaper than a full decode.
  const tjscalingfactor eighth = {1, 8};
  int out_w = TJSCALED(width, eighth), out_h = TJSCALED(height, eighth);
  int pixel_format = cmyk ? TJPF_CMYK : TJPF_GRAY;
  auto pixels = std::make_unique_for_overwrite<unsigned char[]>(static_cast<size_t>(out_w) * out_h *
                                                                tjPixelSize[pixel_format]);
  // STOPONWARNING: libjpeg calls "Corrupt JPEG data" or "Premature end of JPEG file" a
  // warning and fills the rest with grey; for a dataset that is a broken image.
  // LIMITSCANS: refuses progressive files with absurd scan counts (a CPU exhaustion trick).
  if (tjDecompress2(tj, Bytes(bytes), bytes.size(), pixels.get(), out_w, 0, out_h, pixel_format,
                    TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    return JpegError(tj, "decode");
  }
  return info;
}

// png_image owns libpng state between begin and finish; this frees it on every path.
struct PngImage {
  png_image image;
  PngImage() {
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
  }
  ~PngImage() { png_image_free(&image); }
};

Result<ImageInfo> InspectPng(ByteView bytes, bool full_decode) {
  PngImage png;
  if (png_image_begin_read_from_memory(&png.image, bytes.data(), bytes.size()) == 0) {
    return DataLoss(std::string("PNG header: ") + png.image.message);
  }
  SLUICE_RETURN_IF_ERROR(CheckPixels("PNG", png.image.width, png.image.height));
  ImageInfo info{ImageFormat::kPng, png.image.width, png.image.height,
                 PNG_IMAGE_SAMPLE_CHANNELS(png.image.format)};
  if (!full_decode) return info;

  // 8-bit samples in the stored channel layout, palettes expanded: every row is inflated and
  // unfiltered, which is what checks the zlib stream, its Adler-32 and every chunk CRC.
  png.image.format &= ~static_cast<png_uint_32>(PNG_FORMAT_FLAG_LINEAR | PNG_FORMAT_FLAG_COLORMAP);
  auto pixels = std::make_unique_for_overwrite<unsigned char[]>(PNG_IMAGE_SIZE(png.image));
  if (png_image_finish_read(&png.image, nullptr, pixels.get(), 0, nullptr) == 0) {
    return DataLoss(std::string("PNG decode: ") + png.image.message);
  }
  return info;
}

}  // namespace

std::string_view ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "jpeg";
    case ImageFormat::kPng:
      return "png";
    case ImageFormat::kOther:
      return "other";
  }
  return "other";
}

ImageFormat DetectImageFormat(ByteView bytes) {
  if (StartsWith(bytes, kJpegMagic, sizeof kJpegMagic)) return ImageFormat::kJpeg;
  if (StartsWith(bytes, kPngMagic, sizeof kPngMagic)) return ImageFormat::kPng;
  return ImageFormat::kOther;
}

Result<ImageInfo> InspectImage(ByteView bytes, bool full_decode) {
  switch (DetectImageFormat(bytes)) {
    case ImageFormat::kJpeg:
      return InspectJpeg(bytes, full_decode);
    case ImageFormat::kPng:
      return InspectPng(bytes, full_decode);
    case ImageFormat::kOther:
      break;
  }
  return ImageInfo{};
}

}  // namespace sluice::vision

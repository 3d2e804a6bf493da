// InspectImage: what an encoded image is (format, size, channels) and, on request, whether
// it decodes cleanly. Used by `sluice convert images` to keep undecodable files out of
// shards, so that training never meets them.
#pragma once

#include <cstdint>
#include <string_view>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::vision {

enum class ImageFormat { kOther, kJpeg, kPng };
std::string_view ImageFormatName(ImageFormat format);  // "jpeg", "png", "other"

// Format from the first bytes (JPEG: ff d8 ff; PNG: the 8-byte PNG signature).
ImageFormat DetectImageFormat(ByteView bytes);

// Images with more pixels than this are refused before any pixel memory is allocated, so
// a tiny file whose header claims 100000 x 100000 (a "pixel bomb") cannot exhaust memory.
// The value is Pillow's MAX_IMAGE_PIXELS.
inline constexpr uint64_t kMaxImagePixels = 89'478'485;

struct ImageInfo {
  ImageFormat format = ImageFormat::kOther;
  uint32_t width = 0;     // 0 for kOther
  uint32_t height = 0;    // 0 for kOther
  uint32_t channels = 0;  // as stored: 1 gray, 2 gray+alpha, 3 color, 4 color+alpha or CMYK
};

// Reads the header of a JPEG or PNG. With `full_decode` it also decodes every pixel, which
// is what catches truncated or corrupt data (libjpeg's "corrupt data" warnings count as
// errors). Bytes of another format give {kOther, 0, 0, 0} and OK: callers decide whether
// that is acceptable. Errors: DataLoss for a damaged JPEG/PNG, ResourceExhausted above
// kMaxImagePixels. Never crashes, whatever the bytes.
// Threading: safe to call concurrently (no shared state).
Result<ImageInfo> InspectImage(ByteView bytes, bool full_decode);

}  // namespace sluice::vision

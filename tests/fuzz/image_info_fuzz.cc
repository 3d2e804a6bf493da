// InspectImage on arbitrary bytes: must return (an error or an ImageInfo), never crash,
// hang or allocate beyond the pixel cap.
#include <cstddef>
#include <cstdint>

#include "sluice/vision/image_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::ByteView bytes(reinterpret_cast<const char*>(data), size);
  auto info = sluice::vision::InspectImage(bytes, /*full_decode=*/true);
  if (info.ok() && info->format != sluice::vision::ImageFormat::kOther) {
    // A decodable image has a size within the cap.
    if (info->width == 0 || info->height == 0 ||
        uint64_t{info->width} * info->height > sluice::vision::kMaxImagePixels) {
      __builtin_trap();
    }
  }
  return 0;
}

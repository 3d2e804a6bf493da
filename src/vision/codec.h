// Internal interface between ImageDecoder (decode.cc) and the per-format codecs
// (jpeg_codec.cc, png_codec.cc). Not installed: the public API is sluice/vision/decode.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/vision/decode.h"

namespace sluice::vision::internal {

// A grow-only byte buffer that, unlike std::vector, never zero-fills: decoded pixels
// overwrite every byte, and the buffer is reused for every image a thread decodes.
class PixelBuffer {
 public:
  uint8_t* Reserve(size_t bytes) {
    if (bytes > capacity_) {
      data_ = std::make_unique_for_overwrite<uint8_t[]>(bytes);
      capacity_ = bytes;
    }
    return data_.get();
  }
  uint8_t* data() const { return data_.get(); }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

// The region a codec will decode, after clamping a DecodeRequest to the scaled image.
struct Region {
  uint32_t x = 0, y = 0, width = 0, height = 0;
};

// Clamps `request`'s region to a full_width x full_height image (width 0: the whole image).
// Returns false when the requested region lies outside the image.
bool ClampRegion(const DecodeRequest& request, uint32_t full_width, uint32_t full_height,
                 Region* region);

// "JPEG at byte 1234 of 5678: <what>"
std::string AtByte(std::string_view format, size_t offset, size_t size, std::string_view what);

// Caps checked from the header, before anything is allocated.
Status CheckPixelCap(std::string_view format, uint64_t width, uint64_t height,
                     const DecodeOptions& options);
Status CheckByteCap(std::string_view format, std::string_view what, uint64_t bytes,
                    const DecodeOptions& options);

class JpegCodec {
 public:
  explicit JpegCodec(const DecodeOptions& options);
  ~JpegCodec();
  Result<ImageHeader> Open(ByteView encoded);
  Status Decode(const DecodeRequest& request, PixelBuffer* buffer, DecodedImage* out);

 private:
  struct Session;
  const DecodeOptions& options_;
  std::unique_ptr<Session> session_;
};

class PngCodec {
 public:
  explicit PngCodec(const DecodeOptions& options);
  ~PngCodec();
  Result<ImageHeader> Open(ByteView encoded);
  Status Decode(const DecodeRequest& request, PixelBuffer* buffer, DecodedImage* out);

 private:
  struct Session;
  const DecodeOptions& options_;
  std::unique_ptr<Session> session_;
};

}  // namespace sluice::vision::internal

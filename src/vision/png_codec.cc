// PNG decoding through libpng, from memory, into RGB8.
//
// Conversions (docs/vision.md): palette -> RGB, gray (any bit depth) -> RGB, 16-bit -> the
// high byte (Pillow's RGB;16B), alpha and tRNS transparency dropped without compositing (as
// Pillow's convert("RGB") does). Ancillary chunks, gamma and ICC profiles are ignored, as in
// Pillow.
//
// Error handling: like jpeg_codec.cc, libpng reports errors by longjmp; every libpng call
// that can fail runs in a small C-style "Guarded*" function with no C++ objects in its frame.
// Warnings (bad ancillary chunks, extra compressed data) are ignored, as Pillow does: they
// never mean wrong pixels.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "vision/codec.h"

namespace sluice::vision::internal {
namespace {

// Rows decoded between two polls of DecodeOptions::interrupt (a 10000-pixel-wide row takes
// ~0.1 ms).
constexpr uint32_t kRowsPerInterruptCheck = 16;

struct Source {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t offset = 0;
  char message[256] = {};
};

void OnError(png_structp png, png_const_charp what) {
  auto* source = static_cast<Source*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof(source->message), "%s", what);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}

void ReadFromMemory(png_structp png, png_bytep out, size_t n) {
  auto* source = static_cast<Source*>(png_get_io_ptr(png));
  if (n > source->size - source->offset) png_error(png, "data ends inside a chunk (truncated)");
  std::memcpy(out, source->data + source->offset, n);
  source->offset += n;
}

// ---- The guarded region: C-style, no destructors, no locals used after a longjmp. ----

bool GuardedReadInfo(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  return true;
}

// Requests RGB8 output; *passes is 1, or 7 for an interlaced image.
bool GuardedSetRgb8(png_structp png, png_infop info, int* passes) {
  if (setjmp(png_jmpbuf(png))) return false;
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (bit_depth == 16) png_set_strip_16(png);
  png_set_strip_alpha(png);  // a no-op without alpha; palette_to_rgb may add it from tRNS
  if (!(color_type & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
  *passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool GuardedReadRow(png_structp png, png_bytep row) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_row(png, row, nullptr);
  return true;
}

bool GuardedReadImage(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

// ---- End of the guarded region. ----

}  // namespace

struct PngCodec::Session {
  png_structp png = nullptr;
  png_infop info = nullptr;
  Source source;
  PixelBuffer row;  // one decoded row, for rows (or columns) outside the region
  std::unique_ptr<png_bytep[]> rows;
  size_t rows_capacity = 0;

  ~Session() { Reset(); }

  void Reset() {
    if (png != nullptr) png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
    png = nullptr;
    info = nullptr;
  }

  Status Failure() {
    Status s = DataLoss(AtByte("PNG", source.offset, source.size, source.message));
    Reset();
    return s;
  }

  png_bytepp Rows(size_t n) {
    if (n > rows_capacity) {
      rows = std::make_unique<png_bytep[]>(n);
      rows_capacity = n;
    }
    return rows.get();
  }
};

PngCodec::PngCodec(const DecodeOptions& options) : options_(options) {}
PngCodec::~PngCodec() = default;

Result<ImageHeader> PngCodec::Open(ByteView encoded) {
  if (session_ == nullptr) session_ = std::make_unique<Session>();
  Session& s = *session_;
  s.Reset();
  s.source = Source{reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size(), 0, {}};
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s.source, OnError, OnWarning);
  if (s.png != nullptr) s.info = png_create_info_struct(s.png);
  if (s.png == nullptr || s.info == nullptr) {
    s.Reset();
    return ResourceExhausted("PNG: cannot allocate the decoder");
  }
  png_set_read_fn(s.png, &s.source, ReadFromMemory);
  if (!GuardedReadInfo(s.png, s.info)) return s.Failure();

  ImageHeader header;
  header.format = ImageFormat::kPng;
  header.width = png_get_image_width(s.png, s.info);
  header.height = png_get_image_height(s.png, s.info);
  header.channels = png_get_channels(s.png, s.info);
  header.progressive = png_get_interlace_type(s.png, s.info) != PNG_INTERLACE_NONE;
  if (png_get_color_type(s.png, s.info) == PNG_COLOR_TYPE_PALETTE) header.channels = 3;
  Status cap = CheckPixelCap("PNG", header.width, header.height, options_);
  if (!cap.ok()) {
    s.Reset();
    return cap;
  }
  return header;
}

Status PngCodec::Decode(const DecodeRequest& request, PixelBuffer* buffer, DecodedImage* out) {
  if (session_ == nullptr || session_->png == nullptr) {
    return FailedPrecondition("PNG: Decode without Open");
  }
  Session& s = *session_;
  if (request.scale_denom != 1) {
    s.Reset();
    return InvalidArgument("PNG: only scale_denom 1 is supported");
  }
  const uint32_t width = png_get_image_width(s.png, s.info);
  const uint32_t height = png_get_image_height(s.png, s.info);
  Region region;
  if (!ClampRegion(request, width, height, &region)) {
    s.Reset();
    return InvalidArgument("PNG: requested region lies outside the image");
  }
  int passes = 1;
  if (!GuardedSetRgb8(s.png, s.info, &passes)) return s.Failure();
  const size_t row_bytes = png_get_rowbytes(s.png, s.info);
  if (row_bytes != size_t{width} * 3) {
    s.Reset();
    return Internal("PNG: libpng did not produce RGB8 rows");
  }
  const bool interlaced = passes > 1;
  // An interlaced image is complete only after its last pass: it needs the whole image.
  const uint64_t bytes = interlaced ? uint64_t{row_bytes} * height
                                    : uint64_t{region.width} * 3 * region.height + row_bytes;
  Status cap = CheckByteCap("PNG", "decoded image", bytes, options_);
  if (!cap.ok()) {
    s.Reset();
    return cap;
  }

  uint8_t* pixels = nullptr;
  size_t stride = 0;
  if (interlaced) {
    pixels = buffer->Reserve(row_bytes * height);
    png_bytepp rows = s.Rows(height);
    for (uint32_t r = 0; r < height; ++r) rows[r] = pixels + r * row_bytes;
    if (!GuardedReadImage(s.png, rows)) return s.Failure();
    stride = row_bytes;
    pixels += region.y * stride + size_t{region.x} * 3;
  } else {
    // Rows arrive top-down; the rows below the region are never inflated.
    stride = size_t{region.width} * 3;
    pixels = buffer->Reserve(stride * region.height);
    uint8_t* scratch = s.row.Reserve(row_bytes);
    for (uint32_t r = 0; r < region.y + region.height; ++r) {
      if (r % kRowsPerInterruptCheck == 0) {
        Status interrupted = options_.interrupt.Check();
        if (!interrupted.ok()) {
          s.Reset();
          return interrupted;
        }
      }
      const bool inside = r >= region.y;
      const bool direct = inside && region.width == width;
      uint8_t* target = direct ? pixels + (r - region.y) * stride : scratch;
      if (!GuardedReadRow(s.png, target)) return s.Failure();
      if (inside && !direct) {
        std::memcpy(pixels + (r - region.y) * stride, scratch + size_t{region.x} * 3, stride);
      }
    }
  }
  s.Reset();
  out->pixels = pixels;
  out->stride = stride;
  out->width = region.width;
  out->height = region.height;
  out->x = region.x;
  out->y = region.y;
  out->full_width = width;
  out->full_height = height;
  out->scale_denom = 1;
  return Status::OK();
}

}  // namespace sluice::vision::internal

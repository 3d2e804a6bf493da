// JPEG decoding through libjpeg-turbo's libjpeg API (not TurboJPEG): it is the API that
// exposes DCT-domain scaling, jpeg_crop_scanline and jpeg_skip_scanlines.
//
// Error handling: libjpeg reports errors by calling error_exit, which must not return; we
// longjmp back to the caller of the libjpeg function. A longjmp must not skip any C++
// destructor, so every libjpeg call that can fail runs inside one of the small C-style
// "Guarded*" functions below: their frames hold no objects with destructors, they modify no
// locals after setjmp, and they only return a bool. Everything else (allocation, Status,
// strings) happens in ordinary C++ between those calls.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <utility>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include "vision/codec.h"

namespace sluice::vision::internal {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg hands us back a jpeg_error_mgr*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 64];
  uint32_t max_scans;
  const DecodeInterrupt* interrupt;
  Status interrupted;  // what the interrupt check returned when it stopped the decode
};

ErrorManager* Errors(j_common_ptr cinfo) { return reinterpret_cast<ErrorManager*>(cinfo->err); }

[[noreturn]] void OnError(j_common_ptr cinfo) {
  ErrorManager* err = Errors(cinfo);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Level -1 is a corrupt-data warning (libjpeg would go on with guessed pixels): an error for
// us. Levels >= 0 are trace messages: ignored.
void OnMessage(j_common_ptr cinfo, int level) {
  if (level < 0) OnError(cinfo);
}

// Called between scans and once per row group read (among other places): stops scan bombs
// before they burn CPU, and polls the interrupt check (the status is assigned before the
// longjmp, so no destructor is skipped).
void OnProgress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
  ErrorManager* err = Errors(cinfo);
  if (err->interrupt != nullptr && err->interrupt->check != nullptr) {
    err->interrupted = err->interrupt->Check();
    if (!err->interrupted.ok()) {
      std::snprintf(err->message, sizeof(err->message), "interrupted");
      std::longjmp(err->jump, 1);
    }
  }
  if (dinfo->input_scan_number > static_cast<int>(err->max_scans)) {
    std::snprintf(err->message, sizeof(err->message),
                  "progressive JPEG has more than %u scans (DecodeOptions::max_scans)",
                  err->max_scans);
    std::longjmp(err->jump, 1);
  }
}

// ---- The guarded region: C-style, no destructors, no locals used after a longjmp. ----

bool GuardedCreate(jpeg_decompress_struct* cinfo, ErrorManager* err) {
  if (setjmp(err->jump)) return false;
  jpeg_create_decompress(cinfo);
  return true;
}

bool GuardedReadHeader(jpeg_decompress_struct* cinfo, ErrorManager* err, const uint8_t* data,
                       unsigned long size) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, data, size);
  jpeg_read_header(cinfo, TRUE);
  return true;
}

bool GuardedCalcOutput(jpeg_decompress_struct* cinfo, ErrorManager* err) {
  if (setjmp(err->jump)) return false;
  jpeg_calc_output_dimensions(cinfo);
  return true;
}

// Starts decompression and narrows the output to columns [*x, *x + *width) (libjpeg widens
// them to iMCU boundaries and writes back what it will deliver).
bool GuardedStart(jpeg_decompress_struct* cinfo, ErrorManager* err, JDIMENSION* x,
                  JDIMENSION* width) {
  if (setjmp(err->jump)) return false;
  jpeg_start_decompress(cinfo);
  if (*width < cinfo->output_width) jpeg_crop_scanline(cinfo, x, width);
  return true;
}

// Skips `skip` rows, then reads `count` rows into `rows`. *done counts rows delivered, so
// the caller can tell a short read (which libjpeg reports as a warning, i.e. an error here).
bool GuardedReadRows(jpeg_decompress_struct* cinfo, ErrorManager* err, JDIMENSION skip,
                     JSAMPARRAY rows, JDIMENSION count, JDIMENSION* done) {
  if (setjmp(err->jump)) return false;
  if (skip > 0 && jpeg_skip_scanlines(cinfo, skip) != skip) return true;
  while (*done < count) {
    JDIMENSION n = jpeg_read_scanlines(cinfo, rows + *done, count - *done);
    if (n == 0) return true;
    *done += n;
  }
  return true;
}

// ---- End of the guarded region. ----

// Adobe CMYK as Photoshop writes it (and as Pillow assumes for every CMYK JPEG): samples are
// stored inverted. This is Pillow's cmyk2rgb applied to the un-inverted values, bit-exact.
void CmykRowToRgb(const uint8_t* cmyk, uint8_t* rgb, uint32_t width) {
  for (uint32_t i = 0; i < width; ++i, cmyk += 4, rgb += 3) {
    const int cmy[3] = {cmyk[0], cmyk[1], cmyk[2]};
    const int k = cmyk[3];  // Pillow's "nk" = 255 - K: the stored, inverted value
    for (int ch = 0; ch < 3; ++ch) {
      const int t = (255 - cmy[ch]) * k + 128;  // Pillow's MULDIV255
      rgb[ch] = static_cast<uint8_t>(k - (((t >> 8) + t) >> 8));
    }
  }
}

}  // namespace

struct JpegCodec::Session {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  jpeg_progress_mgr progress;
  bool created = false;
  bool open = false;
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::unique_ptr<JSAMPROW[]> rows;
  size_t rows_capacity = 0;

  ~Session() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }

  // The byte where libjpeg stopped reading, for error messages.
  size_t Offset() const {
    if (cinfo.src == nullptr || data == nullptr) return 0;
    const uint8_t* next = cinfo.src->next_input_byte;
    if (next >= data && next <= data + size) return static_cast<size_t>(next - data);
    return size;  // libjpeg is feeding its own fake EOI: the data ended
  }

  Status Failure(StatusCode code = StatusCode::kDataLoss) {
    Status s = !err.interrupted.ok() ? std::exchange(err.interrupted, Status::OK())
                                     : Status(code, AtByte("JPEG", Offset(), size, err.message));
    jpeg_abort_decompress(&cinfo);
    open = false;
    return s;
  }

  JSAMPARRAY Rows(size_t n) {
    if (n > rows_capacity) {
      rows = std::make_unique<JSAMPROW[]>(n);
      rows_capacity = n;
    }
    return rows.get();
  }
};

JpegCodec::JpegCodec(const DecodeOptions& options) : options_(options) {}
JpegCodec::~JpegCodec() = default;

Result<ImageHeader> JpegCodec::Open(ByteView encoded) {
  if (session_ == nullptr) {
    auto s = std::make_unique<Session>();
    s->cinfo.err = jpeg_std_error(&s->err.pub);
    s->err.pub.error_exit = OnError;
    s->err.pub.emit_message = OnMessage;
    if (!GuardedCreate(&s->cinfo, &s->err)) return Internal(std::string("JPEG: ") + s->err.message);
    s->created = true;
    s->progress.progress_monitor = OnProgress;
    s->cinfo.progress = &s->progress;
    session_ = std::move(s);
  }
  Session& s = *session_;
  jpeg_abort_decompress(&s.cinfo);  // forget the previous image (the decompressor is reused)
  s.err.max_scans = options_.max_scans;
  s.err.interrupt = &options_.interrupt;
  s.cinfo.mem->max_memory_to_use = static_cast<long>(options_.max_decoded_bytes);
  s.data = reinterpret_cast<const uint8_t*>(encoded.data());
  s.size = encoded.size();
  if (!GuardedReadHeader(&s.cinfo, &s.err, s.data, static_cast<unsigned long>(s.size))) {
    return s.Failure();
  }
  ImageHeader header;
  header.format = ImageFormat::kJpeg;
  header.width = s.cinfo.image_width;
  header.height = s.cinfo.image_height;
  header.channels = static_cast<uint32_t>(s.cinfo.num_components);
  header.progressive = s.cinfo.progressive_mode;
  switch (s.cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_RGB:
    case JCS_YCbCr:
    case JCS_CMYK:
    case JCS_YCCK:
      break;
    default:
      std::snprintf(s.err.message, sizeof(s.err.message),
                    "unsupported color space (%d components, libjpeg color space %d)",
                    s.cinfo.num_components, static_cast<int>(s.cinfo.jpeg_color_space));
      return s.Failure(StatusCode::kInvalidArgument);
  }
  SLUICE_RETURN_IF_ERROR(CheckPixelCap("JPEG", header.width, header.height, options_));
  if (header.progressive) {
    // Progressive decoding keeps every DCT coefficient (2 bytes per sample) of the image.
    uint64_t coefficients = uint64_t{header.width} * header.height * header.channels * 2;
    SLUICE_RETURN_IF_ERROR(
        CheckByteCap("JPEG", "progressive coefficient buffer", coefficients, options_));
  }
  s.open = true;
  return header;
}

Status JpegCodec::Decode(const DecodeRequest& request, PixelBuffer* buffer, DecodedImage* out) {
  if (session_ == nullptr || !session_->open)
    return FailedPrecondition("JPEG: Decode without Open");
  Session& s = *session_;
  const uint32_t denom = request.scale_denom;
  if (denom != 1 && denom != 2 && denom != 4 && denom != 8) {
    return InvalidArgument("JPEG: scale_denom must be 1, 2, 4 or 8, got " + std::to_string(denom));
  }
  const bool cmyk = s.cinfo.jpeg_color_space == JCS_CMYK || s.cinfo.jpeg_color_space == JCS_YCCK;
  s.cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  s.cinfo.scale_num = 1;
  s.cinfo.scale_denom = denom;
  s.cinfo.dct_method = JDCT_ISLOW;  // Pillow's default: decode equality with torchvision
  s.cinfo.do_fancy_upsampling = TRUE;
  if (!GuardedCalcOutput(&s.cinfo, &s.err)) return s.Failure();

  Region region;
  if (!ClampRegion(request, s.cinfo.output_width, s.cinfo.output_height, &region)) {
    jpeg_abort_decompress(&s.cinfo);
    s.open = false;
    return InvalidArgument("JPEG: requested region lies outside the " +
                           std::to_string(s.cinfo.output_width) + "x" +
                           std::to_string(s.cinfo.output_height) + " image");
  }
  const uint32_t components = cmyk ? 4 : 3;
  // Upper bound before cropping widens the region to iMCU boundaries (at most 32 columns).
  SLUICE_RETURN_IF_ERROR(CheckByteCap("JPEG", "decoded region",
                                      uint64_t{region.width + 32} * region.height * components,
                                      options_));

  const uint32_t full_width = s.cinfo.output_width;  // jpeg_crop_scanline narrows it
  const uint32_t full_height = s.cinfo.output_height;
  JDIMENSION x = region.x, width = region.width;
  if (!GuardedStart(&s.cinfo, &s.err, &x, &width)) return s.Failure();
  const size_t stride = size_t{width} * components;
  uint8_t* pixels = buffer->Reserve(stride * region.height);
  JSAMPARRAY rows = s.Rows(region.height);
  for (uint32_t r = 0; r < region.height; ++r) rows[r] = pixels + r * stride;
  JDIMENSION done = 0;
  if (!GuardedReadRows(&s.cinfo, &s.err, region.y, rows, region.height, &done)) {
    return s.Failure();
  }
  if (done != region.height) {
    std::snprintf(s.err.message, sizeof(s.err.message), "image data ended after %u rows",
                  region.y + done);
    return s.Failure();
  }
  jpeg_abort_decompress(&s.cinfo);  // the rows below the region are never decoded
  s.open = false;

  if (cmyk) {  // in place: an RGB row never overtakes the CMYK row it is read from
    for (uint32_t r = 0; r < region.height; ++r) {
      CmykRowToRgb(pixels + r * stride, pixels + r * size_t{width} * 3, width);
    }
  }
  out->pixels = pixels;
  out->stride = size_t{width} * 3;
  out->width = width;
  out->height = region.height;
  out->x = x;
  out->y = region.y;
  out->full_width = full_width;
  out->full_height = full_height;
  out->scale_denom = denom;
  return Status::OK();
}

}  // namespace sluice::vision::internal

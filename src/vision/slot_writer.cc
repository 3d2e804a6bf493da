#include "vision/slot_writer.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace sluice::vision::internal {
namespace {

// Software binary32 -> binary16 with round-to-nearest-even, by integer arithmetic on the bits.
uint16_t HalfFromFloat(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  f &= 0x7FFFFFFFu;
  if (f >= 0x47800000u) {  // >= 65536 (rounds to inf), inf or NaN
    return static_cast<uint16_t>(sign | (f > 0x7F800000u ? 0x7E00u : 0x7C00u));
  }
  if (f < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero.
    // Adding 0.5 lets the FPU round the mantissa to the half subnormal grid.
    float magnitude;
    std::memcpy(&magnitude, &f, 4);
    magnitude += 0.5f;
    uint32_t bits;
    std::memcpy(&bits, &magnitude, 4);
    return static_cast<uint16_t>(sign | (bits - 0x3F000000u));
  }
  const uint32_t mantissa_odd = (f >> 13) & 1u;
  f += 0xC8000FFFu + mantissa_odd;  // rebias exponent (-112 << 23) and round half to even
  return static_cast<uint16_t>(sign | (f >> 13));
}

__attribute__((target("avx,f16c"))) void HalvesF16c(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) out[i] = HalfFromFloat(in[i]);
}

// CPUID + XGETBV by hand: clang 14's __builtin_cpu_supports does not know "f16c".
bool HaveF16c() {
  static const bool have = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    if (!(ecx & bit_AVX) || !(ecx & bit_F16C) || !(ecx & bit_OSXSAVE)) return false;
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    return (xcr0_lo & 6u) == 6u;  // the OS saves XMM and YMM registers
  }();
  return have;
}

}  // namespace

void FloatsToHalves(const float* in, uint16_t* out, size_t n) {
  if (HaveF16c()) return HalvesF16c(in, out, n);
  for (size_t i = 0; i < n; ++i) out[i] = HalfFromFloat(in[i]);
}

namespace {

uint8_t RoundToByte(float v) { return static_cast<uint8_t>(std::clamp(v + 0.5f, 0.0f, 255.0f)); }
float Same(float v) { return v; }

// One channel of a resampled RGBX row (every fourth float of `in`) into `out[0, n)`, mirrored
// when flipping. Separate loops per direction keep each a plain loop that vectorises.
template <typename T, typename Convert>
void WritePlaneRow(const float* in, size_t n, bool flip, float scale, float bias, T* out,
                   Convert convert) {
  if (flip) {
    for (size_t j = 0; j < n; ++j) out[n - 1 - j] = convert(in[4 * j] * scale + bias);
  } else {
    for (size_t j = 0; j < n; ++j) out[j] = convert(in[4 * j] * scale + bias);
  }
}

// A whole RGBX row into interleaved RGB `out[0, 3n)`, mirrored when flipping.
template <typename T, typename Convert>
void WritePixelRow(const float* rgbx, size_t n, bool flip, const std::array<float, 3>& scale,
                   const std::array<float, 3>& bias, T* out, Convert convert) {
  for (size_t c = 0; c < 3; ++c) {
    const float s = scale[c], b = bias[c];
    if (flip) {
      for (size_t j = 0; j < n; ++j) out[3 * (n - 1 - j) + c] = convert(rgbx[4 * j + c] * s + b);
    } else {
      for (size_t j = 0; j < n; ++j) out[3 * j + c] = convert(rgbx[4 * j + c] * s + b);
    }
  }
}

// Copies n floats to `dst` with non-temporal stores where aligned: the slot is written once
// and read by the consumer much later, so streaming it past the cache avoids reading every
// destination line first (read-for-ownership), halving the memory traffic of the write.
void StreamFloats(const float* src, float* dst, size_t n) {
#if defined(__x86_64__)
  size_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(dst + i) & 15) != 0; ++i) dst[i] = src[i];
  for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
#else
  std::memcpy(dst, src, n * sizeof(float));
#endif
}

}  // namespace

void FinishSlot() {
#if defined(__x86_64__)
  _mm_sfence();  // order the streaming stores before whatever publishes the slot
#endif
}

SlotWriter::SlotWriter(const OutputSpec& spec, const PixelMap& map, const CropPlan& plan, void* out,
                       SlotRows* rows)
    : spec_(spec), map_(map), plan_(plan), out_(static_cast<uint8_t*>(out)), rows_(rows) {
  rows_->values.resize(size_t{std::max(plan.canvas_width, plan.content_width)} * 3);
}

void SlotWriter::Store(const float* values, size_t n, size_t element) {
  switch (spec_.dtype) {
    case DType::kUInt8:
      for (size_t i = 0; i < n; ++i) out_[element + i] = RoundToByte(values[i]);
      return;
    case DType::kFloat16:
      FloatsToHalves(values, reinterpret_cast<uint16_t*>(out_) + element, n);
      return;
    case DType::kFloat32:
      StreamFloats(values, reinterpret_cast<float*>(out_) + element, n);
      return;
  }
}

void SlotWriter::FillPadding() {
  const size_t w = plan_.canvas_width, h = plan_.canvas_height;
  float* v = rows_->values.data();
  const bool nchw = spec_.layout == Layout::kNCHW;
  for (size_t i = 0; i < w; ++i) {
    for (size_t c = 0; c < 3; ++c) (nchw ? v[c * w + i] : v[3 * i + c]) = map_.pad[c];
  }
  for (size_t y = 0; y < h; ++y) {
    if (nchw) {
      for (size_t c = 0; c < 3; ++c) Store(v + c * w, w, (c * h + y) * w);
    } else {
      Store(v, 3 * w, y * w * 3);
    }
  }
}

void SlotWriter::WriteRow(uint32_t y, const float* rgbx) {
  const size_t cw = plan_.content_width;
  const size_t canvas_w = plan_.canvas_width, canvas_h = plan_.canvas_height;
  const size_t row = plan_.content_y + size_t{y};
  const bool flip = plan_.flip;
  auto* f32 = reinterpret_cast<float*>(out_);
  auto* f16 = reinterpret_cast<uint16_t*>(out_);
  float* values = rows_->values.data();
  // Results go straight into the slot, except float16, which is converted in bulk.
  if (spec_.layout == Layout::kNCHW) {
    for (size_t c = 0; c < 3; ++c) {
      const size_t at = (c * canvas_h + row) * canvas_w + plan_.content_x;
      const float* in = rgbx + c;
      switch (spec_.dtype) {
        case DType::kUInt8:
          WritePlaneRow(in, cw, flip, 1.0f, 0.0f, out_ + at, RoundToByte);
          break;
        case DType::kFloat16:
          WritePlaneRow(in, cw, flip, map_.scale[c], map_.bias[c], values, Same);
          FloatsToHalves(values, f16 + at, cw);
          break;
        case DType::kFloat32:
          WritePlaneRow(in, cw, flip, map_.scale[c], map_.bias[c], values, Same);
          StreamFloats(values, f32 + at, cw);
          break;
      }
    }
    return;
  }
  const size_t at = (row * canvas_w + plan_.content_x) * 3;
  switch (spec_.dtype) {
    case DType::kUInt8:
      WritePixelRow(rgbx, cw, flip, {1, 1, 1}, {0, 0, 0}, out_ + at, RoundToByte);
      break;
    case DType::kFloat16:
      WritePixelRow(rgbx, cw, flip, map_.scale, map_.bias, values, Same);
      FloatsToHalves(values, f16 + at, 3 * cw);
      break;
    case DType::kFloat32:
      WritePixelRow(rgbx, cw, flip, map_.scale, map_.bias, values, Same);
      StreamFloats(values, f32 + at, 3 * cw);
      break;
  }
}

}  // namespace sluice::vision::internal

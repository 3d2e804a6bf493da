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

SlotWriter::SlotWriter(const OutputSpec& spec, const PixelMap& map, const CropPlan& plan,
                       void* out, SlotRows* rows)
    : spec_(spec), map_(map), plan_(plan), out_(static_cast<uint8_t*>(out)), rows_(rows) {
  rows_->values.resize(size_t{std::max(plan.canvas_width, plan.content_width)} * 3);
  rows_->halves.resize(rows_->values.size());
}

void SlotWriter::Store(const float* values, size_t n, size_t element) {
  switch (spec_.dtype) {
    case DType::kUInt8: {
      uint8_t* dst = out_ + element;
      for (size_t i = 0; i < n; ++i) {
        dst[i] = static_cast<uint8_t>(std::clamp(values[i] + 0.5f, 0.0f, 255.0f));
      }
      return;
    }
    case DType::kFloat16:
      FloatsToHalves(values, rows_->halves.data(), n);
      std::memcpy(out_ + element * 2, rows_->halves.data(), n * 2);
      return;
    case DType::kFloat32:
      std::memcpy(out_ + element * 4, values, n * 4);
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

void SlotWriter::WriteRow(uint32_t y, const float* rgb) {
  const size_t cw = plan_.content_width;
  const size_t canvas_w = plan_.canvas_width, canvas_h = plan_.canvas_height;
  const size_t row = plan_.content_y + size_t{y};
  const bool is_uint8 = spec_.dtype == DType::kUInt8;
  float* v = rows_->values.data();
  // Separate loops per channel and per flip direction: each is a plain strided loop the
  // compiler vectorises.
  for (size_t c = 0; c < 3; ++c) {
    const float scale = is_uint8 ? 1.0f : map_.scale[c];
    const float bias = is_uint8 ? 0.0f : map_.bias[c];
    const float* in = rgb + c;
    if (spec_.layout == Layout::kNCHW) {
      float* plane = v + c * cw;
      if (plan_.flip) {
        for (size_t j = 0; j < cw; ++j) plane[cw - 1 - j] = in[3 * j] * scale + bias;
      } else {
        for (size_t j = 0; j < cw; ++j) plane[j] = in[3 * j] * scale + bias;
      }
    } else {
      float* pixels = v + c;
      if (plan_.flip) {
        for (size_t j = 0; j < cw; ++j) pixels[3 * (cw - 1 - j)] = in[3 * j] * scale + bias;
      } else {
        for (size_t j = 0; j < cw; ++j) pixels[3 * j] = in[3 * j] * scale + bias;
      }
    }
  }
  if (spec_.layout == Layout::kNCHW) {
    for (size_t c = 0; c < 3; ++c) {
      Store(v + c * cw, cw, (c * canvas_h + row) * canvas_w + plan_.content_x);
    }
  } else {
    Store(v, 3 * cw, (row * canvas_w + plan_.content_x) * 3);
  }
}

}  // namespace sluice::vision::internal

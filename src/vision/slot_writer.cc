#include "vision/slot_writer.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "vision/cpu_features.h"
#include "vision/transpose8.h"

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

}  // namespace

void FloatsToHalves(const float* in, uint16_t* out, size_t n) {
  if (HaveF16c()) return HalvesF16c(in, out, n);
  for (size_t i = 0; i < n; ++i) out[i] = HalfFromFloat(in[i]);
}

namespace {

uint8_t RoundToByte(float v) { return static_cast<uint8_t>(std::clamp(v + 0.5f, 0.0f, 255.0f)); }

// A resampled RGBX row of n pixels as output values v = pixel * scale[c] + bias[c] (a
// multiply, then an add: the same rounding in every kernel), mirrored when flipping:
//   planar (NCHW):      out[c * n + j], three rows of n values
//   interleaved (NHWC): out[3 * j + c], n RGB triples; `out` has one spare float at the end
// j counts output columns (source column n - 1 - j when flipping).

void PlanarRow(const float* rgbx, size_t n, const RowMap& m, float* out) {
  for (size_t c = 0; c < 3; ++c) {
    const float s = m.scale[c], b = m.bias[c];
    float* o = out + c * n;
    if (m.flip) {
      for (size_t j = 0; j < n; ++j) o[n - 1 - j] = rgbx[4 * j + c] * s + b;
    } else {
      for (size_t j = 0; j < n; ++j) o[j] = rgbx[4 * j + c] * s + b;
    }
  }
}

#if !defined(__x86_64__)  // (x86 has InterleavedRowSse)
void InterleavedRow(const float* rgbx, size_t n, const RowMap& m, float* out) {
  for (size_t j = 0; j < n; ++j) {
    const size_t at = 3 * (m.flip ? n - 1 - j : j);
    for (size_t c = 0; c < 3; ++c) out[at + c] = rgbx[4 * j + c] * m.scale[c] + m.bias[c];
  }
}
#endif

#if defined(__x86_64__)
// Where PlanarBlockAvx2 puts the values of block row r, channel c, output columns at.. (8 at
// a time, 16 at a time through Two, or one in the tail): rows of a planar buffer
// (out[(r * 3 + c) * n + at]) that Store then converts, or, for float32 slots whose rows
// start 32-byte aligned, straight into the slot with non-temporal stores (one pass over the
// values instead of three).
struct ToRows {
  float* out;
  size_t n;
  __attribute__((target("avx2"))) void operator()(size_t r, size_t c, size_t at, __m256 v) const {
    _mm256_storeu_ps(out + (r * 3 + c) * n + at, v);
  }
  void operator()(size_t r, size_t c, size_t at, float v) const { out[(r * 3 + c) * n + at] = v; }
  __attribute__((target("avx2"))) void Two(size_t r, size_t c, size_t at, __m256 lo,
                                           __m256 hi) const {
    (*this)(r, c, at, lo);
    (*this)(r, c, at + 8, hi);
  }
};

struct ToSlot {
  float* slot;
  size_t canvas_w, canvas_h, x0, row0;
  float* At(size_t r, size_t c, size_t at) const {
    return slot + (c * canvas_h + row0 + r) * canvas_w + x0 + at;
  }
  __attribute__((target("avx2"))) void operator()(size_t r, size_t c, size_t at, __m256 v) const {
    _mm256_stream_ps(At(r, c, at), v);
  }
  void operator()(size_t r, size_t c, size_t at, float v) const { *At(r, c, at) = v; }
  __attribute__((target("avx2"))) void Two(size_t r, size_t c, size_t at, __m256 lo,
                                           __m256 hi) const {
    _mm256_stream_ps(At(r, c, at), lo);
    _mm256_stream_ps(At(r, c, at) + 8, hi);
  }
};

// ToSlot whose 16-value runs start 64-byte aligned, with AVX-512: a run is one 64-byte
// non-temporal store, a whole line at once (vision_bench: ~2% more images/s than two 32-byte
// halves on Zen 4, where the slot's stores are ~10% of the image path).
struct ToSlotWide : ToSlot {
  __attribute__((target("avx2,avx512f"))) void Two(size_t r, size_t c, size_t at, __m256 lo,
                                                   __m256 hi) const {
    // (The masked forms: GCC 12 warns that the plain ones read an undefined vector.)
    const __m512d low =
        _mm512_mask_broadcast_f64x4(_mm512_setzero_pd(), 0xff, _mm256_castps_pd(lo));
    const __m512d both = _mm512_mask_insertf64x4(low, 0xff, low, _mm256_castps_pd(hi), 1);
    _mm512_stream_ps(At(r, c, at), _mm512_castpd_ps(both));
  }
};

// A RowBlock as planar values (block row r, channel c, output column j; mirrored when
// flipping), handed to `put`. 8x8 transposes turn 8 columns of 8 rows into 8 rows of 8
// columns.
template <typename Put>
__attribute__((target("avx2"))) void PlanarBlockAvx2(const RowBlock& block, const RowMap& m,
                                                     const Put& put) {
  const size_t n = block.width;
  const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  for (size_t c = 0; c < 3; ++c) {
    const __m256 s = _mm256_set1_ps(m.scale[c]), b = _mm256_set1_ps(m.bias[c]);
    size_t x = 0;
    // 16 columns at a time: each row's two vectors go out back to back, so a 64-byte line
    // of the slot is completed at once (whole write-combining lines for streaming stores).
    for (; x + 16 <= n; x += 16) {
      __m256 v[8], w[8];
      for (size_t i = 0; i < 8; ++i) {
        v[i] = _mm256_loadu_ps(block.lanes + ((x + i) * 3 + c) * 8);
        w[i] = _mm256_loadu_ps(block.lanes + ((x + 8 + i) * 3 + c) * 8);
      }
      Transpose8(v);  // v[r] = columns x..x+7 of row r
      Transpose8(w);  // w[r] = columns x+8..x+15
      for (size_t r = 0; r < block.rows; ++r) {
        const __m256 a = _mm256_add_ps(_mm256_mul_ps(v[r], s), b);
        const __m256 d = _mm256_add_ps(_mm256_mul_ps(w[r], s), b);
        if (m.flip) {  // columns x..x+15 land at n-16-x..n-1-x, reversed
          put.Two(r, c, n - 16 - x, _mm256_permutevar8x32_ps(d, reverse),
                  _mm256_permutevar8x32_ps(a, reverse));
        } else {
          put.Two(r, c, x, a, d);
        }
      }
    }
    for (; x + 8 <= n; x += 8) {
      __m256 v[8];
      for (size_t i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(block.lanes + ((x + i) * 3 + c) * 8);
      Transpose8(v);
      const size_t at = m.flip ? n - 8 - x : x;
      for (size_t r = 0; r < block.rows; ++r) {
        __m256 value = _mm256_add_ps(_mm256_mul_ps(v[r], s), b);
        if (m.flip) value = _mm256_permutevar8x32_ps(value, reverse);
        put(r, c, at, value);
      }
    }
    for (; x < n; ++x) {
      const size_t at = m.flip ? n - 1 - x : x;
      for (size_t r = 0; r < block.rows; ++r) {
        put(r, c, at, block.lanes[(x * 3 + c) * 8 + r] * m.scale[c] + m.bias[c]);
      }
    }
  }
}

// One 4-float store per pixel at 3 * j: its fourth lane is overwritten by the next pixel, so
// pixels are written in increasing output order (the spare float takes the last one's).
void InterleavedRowSse(const float* rgbx, size_t n, const RowMap& m, float* out) {
  const __m128 s = _mm_setr_ps(m.scale[0], m.scale[1], m.scale[2], 0.0f);
  const __m128 b = _mm_setr_ps(m.bias[0], m.bias[1], m.bias[2], 0.0f);
  for (size_t j = 0; j < n; ++j) {
    const size_t src = m.flip ? n - 1 - j : j;
    _mm_storeu_ps(out + 3 * j, _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(rgbx + 4 * src), s), b));
  }
}
#endif

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
  // + 1: the interleaved kernel's spare float.
  rows_->values.resize(size_t{std::max(plan.canvas_width, plan.content_width)} * 3 + 1);
  if (spec.dtype == DType::kUInt8) {  // uint8 keeps the pixel; Store rounds it
    row_map_ = RowMap{{1, 1, 1}, {0, 0, 0}, plan.flip};
  } else {
    row_map_ = RowMap{map.scale, map.bias, plan.flip};
  }
  stores_ = Streams(plan.content_width);
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
    case DType::kInt32:
    case DType::kInt64:
    case DType::kString:
      return;  // not image dtypes: ImageTransform::Make refuses them
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
  float* values = rows_->values.data();
  if (spec_.layout == Layout::kNCHW) {  // (with AVX2, NCHW comes through WriteBlock)
    PlanarRow(rgbx, cw, row_map_, values);
    for (size_t c = 0; c < 3; ++c) {
      Store(values + c * cw, cw, (c * canvas_h + row) * canvas_w + plan_.content_x);
    }
    return;
  }
#if defined(__x86_64__)
  InterleavedRowSse(rgbx, cw, row_map_, values);
#else
  InterleavedRow(rgbx, cw, row_map_, values);
#endif
  Store(values, 3 * cw, (row * canvas_w + plan_.content_x) * 3);
}

void SlotWriter::WriteBlock(const RowBlock& block) {
#if defined(__x86_64__)
  if (spec_.layout == Layout::kNCHW && HaveAvx2Fma()) {
    const size_t n = block.width;
    const size_t canvas_w = plan_.canvas_width, canvas_h = plan_.canvas_height;
    const size_t row0 = plan_.content_y + size_t{block.y0};
    if (stores_ != SlotStores::kNone && n == plan_.content_width) return StreamBlock(block);
    rows_->block.resize(8 * 3 * n);
    float* values = rows_->block.data();
    PlanarBlockAvx2(block, row_map_, ToRows{values, n});
    for (size_t r = 0; r < block.rows; ++r) {
      const size_t row = row0 + r;
      for (size_t c = 0; c < 3; ++c) {
        Store(values + (r * 3 + c) * n, n, (c * canvas_h + row) * canvas_w + plan_.content_x);
      }
    }
    return;
  }
#endif
  RowSink::WriteBlock(block);
}

SlotWriter::SlotStores SlotWriter::Streams(size_t width) const {
#if defined(__x86_64__)
  const auto aligned = [&](size_t bytes, size_t values) {
    return reinterpret_cast<uintptr_t>(out_) % bytes == 0 && plan_.canvas_width % values == 0 &&
           plan_.content_x % values == 0 && width % values == 0;
  };
  if (spec_.layout != Layout::kNCHW || spec_.dtype != DType::kFloat32 || !HaveAvx2Fma()) {
    return SlotStores::kNone;
  }
  if (HaveAvx512f() && aligned(64, 16)) return SlotStores::kZmm;
  if (aligned(32, 8)) return SlotStores::kYmm;
#else
  (void)width;
#endif
  return SlotStores::kNone;
}

void SlotWriter::StreamBlock(const RowBlock& block) {
#if defined(__x86_64__)
  const ToSlot to{reinterpret_cast<float*>(out_), plan_.canvas_width, plan_.canvas_height,
                  plan_.content_x, plan_.content_y + size_t{block.y0}};
  if (stores_ == SlotStores::kZmm) {
    PlanarBlockAvx2(block, row_map_, ToSlotWide{to});
  } else {
    PlanarBlockAvx2(block, row_map_, to);
  }
#else
  (void)block;
#endif
}

}  // namespace sluice::vision::internal

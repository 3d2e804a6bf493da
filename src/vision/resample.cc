#include "sluice/vision/resample.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "vision/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sluice::vision {
namespace {

// Pillow's bilinear filter: a triangle of support 1.
double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

#define SLUICE_INLINE inline __attribute__((always_inline))

// SIMD through GCC/clang vector extensions where the compiler maps them well (SSE2, AVX,
// NEON), and AVX2 intrinsics for the byte-to-float conversion, which it does not.
typedef float F32x4 __attribute__((vector_size(16)));

SLUICE_INLINE F32x4 Load4(const float* p) {
  F32x4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The vertical pass for one output row: out[i] = sum_k w[k] * row(first + k)[i] over the n
// bytes of the used columns. Portable version: whole-row loops the compiler vectorises.
void VerticalRowBaseline(const uint8_t* first_row, size_t stride, int32_t count, const float* w,
                         size_t n, float* __restrict out) {
  const uint8_t* __restrict row = first_row;
  const float w0 = w[0];
  for (size_t i = 0; i < n; ++i) out[i] = w0 * static_cast<float>(row[i]);
  for (int32_t k = 1; k < count; ++k) {
    row = first_row + k * stride;
    const float wk = w[k];
    for (size_t i = 0; i < n; ++i) out[i] += wk * static_cast<float>(row[i]);
  }
}

using VerticalFn = void (*)(const uint8_t*, size_t, int32_t, const float*, size_t, float*);

#if defined(__x86_64__)
// AVX2 version: 16 columns at a time, every tap summed in registers (one store per column).
__attribute__((target("avx2,fma"))) void VerticalRowAvx2(const uint8_t* first_row, size_t stride,
                                                         int32_t count, const float* w, size_t n,
                                                         float* __restrict out) {
#define SLUICE_LOAD8(p) \
  _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = _mm256_set1_ps(w[0]);
    __m256 a = _mm256_mul_ps(w0, SLUICE_LOAD8(first_row + i));
    __m256 b = _mm256_mul_ps(w0, SLUICE_LOAD8(first_row + i + 8));
    for (int32_t k = 1; k < count; ++k) {
      const uint8_t* row = first_row + k * stride + i;
      const __m256 wk = _mm256_set1_ps(w[k]);
      a = _mm256_fmadd_ps(wk, SLUICE_LOAD8(row), a);
      b = _mm256_fmadd_ps(wk, SLUICE_LOAD8(row + 8), b);
    }
    _mm256_storeu_ps(out + i, a);
    _mm256_storeu_ps(out + i + 8, b);
  }
#undef SLUICE_LOAD8
  for (; i < n; ++i) {
    float acc = 0;
    for (int32_t k = 0; k < count; ++k) acc += w[k] * static_cast<float>(first_row[k * stride + i]);
    out[i] = acc;
  }
}
#endif

// The horizontal pass for one output row of interleaved RGB floats. Each pixel is handled as
// one 4-lane vector (R, G, B and the next pixel's R, which is ignored), so a tap costs one
// multiply-add instead of three dependent scalar ones. Every output pixel runs the same
// number of taps (the axis's max_count(), zero weights past its own count): a fixed trip
// count keeps the loop free of mispredicted branches, and is a compile-time constant for the
// common small filters. `in` must be readable for max_count() pixels past any first(x) and
// have one float past that for the fourth lane. `out` gets 4 floats per pixel (RGBX): whole,
// aligned vector stores.
template <int kTaps>
SLUICE_INLINE void HorizontalRow(const float* __restrict in, const ResampleAxis& axis,
                                 int32_t origin, int32_t taps, float* __restrict out) {
  const int32_t n = kTaps > 0 ? kTaps : taps;
  const uint32_t out_size = axis.out_size();
  const size_t stride = axis.taps();
  const int32_t* __restrict first = &axis.first(0);
  const float* __restrict weights = axis.weights(0);
  for (uint32_t x = 0; x < out_size; ++x, weights += stride) {
    const float* p = in + 3 * (first[x] - origin);
    // Two partial sums halve the dependent multiply-add chain.
    F32x4 even = {0, 0, 0, 0}, odd = {0, 0, 0, 0};
    int32_t k = 0;
    for (; k + 1 < n; k += 2) {
      even += weights[k] * Load4(p + 3 * k);
      odd += weights[k + 1] * Load4(p + 3 * k + 3);
    }
    if (k < n) even += weights[k] * Load4(p + 3 * k);
    const F32x4 acc = even + odd;
    std::memcpy(out + 4 * x, &acc, sizeof(acc));
  }
}

using HorizontalFn = void (*)(const float* in, const ResampleAxis& axis, int32_t origin,
                             int32_t taps, const float* pair_weights, float* out);

template <int kTaps>
void HorizontalBaseline(const float* in, const ResampleAxis& axis, int32_t origin, int32_t taps,
                        const float* /*pair_weights*/, float* out) {
  HorizontalRow<kTaps>(in, axis, origin, taps, out);
}

#if defined(__x86_64__)
// AVX2 version of HorizontalRow: two output pixels per 8-lane vector (pixel x in the low
// half, x + 1 in the high half), with weights pre-paired by PairWeights. Same sums in the
// same order as HorizontalRow, per lane. With an odd width the last pair's high half is
// pixel x again with zero weights, and its store runs 4 floats past the row (slack).
__attribute__((target("avx2,fma"))) SLUICE_INLINE __m256 Load2(const float* lo, const float* hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
}

template <int kTaps>
__attribute__((target("avx2,fma"))) void HorizontalAvx2(const float* __restrict in,
                                                        const ResampleAxis& axis, int32_t origin,
                                                        int32_t taps,
                                                        const float* __restrict pair_weights,
                                                        float* __restrict out) {
  const int32_t n = kTaps > 0 ? kTaps : taps;
  const uint32_t out_size = axis.out_size();
  const int32_t* __restrict first = &axis.first(0);
  const float* w = pair_weights;
  for (uint32_t x = 0; x < out_size; x += 2, w += 8 * n) {
    const float* lo = in + 3 * (first[x] - origin);
    const float* hi = x + 1 < out_size ? in + 3 * (first[x + 1] - origin) : lo;
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    int32_t k = 0;
    for (; k + 1 < n; k += 2) {
      even = _mm256_fmadd_ps(_mm256_loadu_ps(w + 8 * k), Load2(lo + 3 * k, hi + 3 * k), even);
      odd = _mm256_fmadd_ps(_mm256_loadu_ps(w + 8 * k + 8), Load2(lo + 3 * k + 3, hi + 3 * k + 3), odd);
    }
    if (k < n) even = _mm256_fmadd_ps(_mm256_loadu_ps(w + 8 * k), Load2(lo + 3 * k, hi + 3 * k), even);
    _mm256_storeu_ps(out + 4 * x, _mm256_add_ps(even, odd));
  }
}

// The horizontal weights of output pixels x and x + 1 as HorizontalAvx2 reads them: per
// pair and tap, weight(x) four times, then weight(x + 1) four times.
void PairWeights(const ResampleAxis& axis, std::vector<float>* out) {
  const uint32_t pairs = (axis.out_size() + 1) / 2;
  const size_t n = static_cast<size_t>(axis.max_count());
  out->assign(size_t{pairs} * n * 8, 0.0f);
  float* w = out->data();
  for (uint32_t x = 0; x < axis.out_size(); ++x) {
    float* pair = w + size_t{x / 2} * n * 8 + (x % 2) * 4;
    for (size_t k = 0; k < n; ++k) std::fill(pair + 8 * k, pair + 8 * k + 4, axis.weights(x)[k]);
  }
}
#endif

// The horizontal kernels specialised for the common tap counts (a compile-time trip count).
#define SLUICE_BY_TAPS(kernel, taps) \
  switch (taps) {                    \
    case 2:                          \
      return kernel<2>;              \
    case 3:                          \
      return kernel<3>;              \
    case 4:                          \
      return kernel<4>;              \
    case 5:                          \
      return kernel<5>;              \
    case 6:                          \
      return kernel<6>;              \
    case 7:                          \
      return kernel<7>;              \
    case 8:                          \
      return kernel<8>;              \
    default:                         \
      return kernel<0>;              \
  }

HorizontalFn BaselineHorizontal(int32_t taps) { SLUICE_BY_TAPS(HorizontalBaseline, taps) }
#if defined(__x86_64__)
HorizontalFn Avx2Horizontal(int32_t taps) { SLUICE_BY_TAPS(HorizontalAvx2, taps) }
#endif
#undef SLUICE_BY_TAPS

// What one Resampler::Run needs.
struct Pass {
  const uint8_t* pixels;
  size_t stride;
  const ResampleAxis* horizontal;
  const ResampleAxis* vertical;
  RowSink* sink;
  float* column_sums;  // n + padding floats
  float* row;          // 4 * (out width + 1) floats (RGBX, one pixel of slack)
  size_t n;            // bytes of the used columns in a row
  VerticalFn vertical_row;
  HorizontalFn horizontal_row;
  const float* pair_weights;  // for HorizontalAvx2
};

void Rows(const Pass& p) {
  const int32_t x0 = p.horizontal->lo();
  const int32_t taps = p.horizontal->max_count();
  const size_t row_floats = size_t{p.horizontal->out_size()} * 4;
  for (uint32_t y = 0; y < p.vertical->out_size(); ++y) {
    if (p.vertical->count(y) == 0 || p.n == 0) {
      std::fill(p.row, p.row + row_floats, 0.0f);
    } else {
      const uint8_t* first_row = p.pixels + p.vertical->first(y) * p.stride + size_t(x0) * 3;
      p.vertical_row(first_row, p.stride, p.vertical->count(y), p.vertical->weights(y), p.n,
                     p.column_sums);
      p.horizontal_row(p.column_sums, *p.horizontal, x0, taps, p.pair_weights, p.row);
    }
    p.sink->WriteRow(y, p.row);
  }
}

}  // namespace

void ResampleAxis::Compute(uint32_t in_size, double box0, double box1, uint32_t out_size) {
  assert(out_size > 0 && box0 < box1);
  // Pillow passes the box as C floats.
  const double in0 = static_cast<float>(box0);
  const double in1 = static_cast<float>(box1);
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the triangle's support, widened to antialias
  out_size_ = out_size;
  taps_ = static_cast<uint32_t>(std::ceil(support)) * 2 + 1;
  first_.resize(out_size);
  count_.resize(out_size);
  weights_.assign(size_t{out_size} * taps_, 0.0f);
  lo_ = static_cast<int32_t>(in_size);
  hi_ = 0;
  max_count_ = 0;
  for (uint32_t xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    // Pillow rounds the bounds with (int)(v + 0.5), which truncates toward zero.
    int32_t xmin = static_cast<int32_t>(center - support + 0.5);
    xmin = std::max(xmin, 0);
    int32_t xmax = static_cast<int32_t>(center + support + 0.5);
    xmax = std::min(xmax, static_cast<int32_t>(in_size));
    const int32_t n = std::clamp(xmax - xmin, 0, static_cast<int32_t>(taps_));
    const double ss = 1.0 / filterscale;
    auto tap = [&](int32_t x) { return Triangle((x + xmin - center + 0.5) * ss); };
    double total = 0.0;
    for (int32_t x = 0; x < n; ++x) total += tap(x);
    if (total == 0.0) total = 1.0;  // Pillow leaves all-zero weights unnormalised
    float* w = &weights_[size_t{xx} * taps_];
    for (int32_t x = 0; x < n; ++x) w[x] = static_cast<float>(tap(x) / total);
    first_[xx] = xmin;
    count_[xx] = n;
    max_count_ = std::max(max_count_, n);
    if (n > 0) {
      lo_ = std::min(lo_, xmin);
      hi_ = std::max(hi_, xmin + n);
    }
  }
  if (hi_ <= lo_) lo_ = hi_ = 0;
}

void ResampleAxis::Shift(uint32_t origin) {
  const int32_t o = static_cast<int32_t>(origin);
  for (int32_t& f : first_) f -= o;
  lo_ -= o;
  hi_ -= o;
}

void Resampler::Run(const uint8_t* pixels, size_t stride, const ResampleAxis& horizontal,
                    const ResampleAxis& vertical, RowSink* sink) {
  const size_t n = size_t(horizontal.hi() - horizontal.lo()) * 3;
  // Padding read by HorizontalRow's fixed tap count and fourth lane: zero weights times
  // finite zeros, so it never changes a sum.
  const size_t padding = size_t(horizontal.max_count()) * 3 + 1;
  column_sums_.resize(n + padding);
  std::fill(column_sums_.begin() + n, column_sums_.end(), 0.0f);
  row_.resize((size_t{horizontal.out_size()} + 1) * 4);
  Pass pass{pixels,
            stride,
            &horizontal,
            &vertical,
            sink,
            column_sums_.data(),
            row_.data(),
            n,
            VerticalRowBaseline,
            BaselineHorizontal(horizontal.max_count()),
            nullptr};
#if defined(__x86_64__)
  if (internal::HaveAvx2Fma()) {
    PairWeights(horizontal, &pair_weights_);
    pass.vertical_row = VerticalRowAvx2;
    pass.horizontal_row = Avx2Horizontal(horizontal.max_count());
    pass.pair_weights = pair_weights_.data();
  }
#endif
  Rows(pass);
}

}  // namespace sluice::vision

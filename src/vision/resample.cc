#include "sluice/vision/resample.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "vision/cpu_features.h"
#include "vision/transpose8.h"

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
                              int32_t taps, float* out);

template <int kTaps>
void HorizontalBaseline(const float* in, const ResampleAxis& axis, int32_t origin, int32_t taps,
                        float* out) {
  HorizontalRow<kTaps>(in, axis, origin, taps, out);
}

#if defined(__x86_64__)
// ---- AVX2: 8 output rows at a time ----
// The vertical pass fills 8 rows; a transpose turns them into columns of 8 rows (3 floats
// per input pixel, 8 lanes each), so the horizontal pass computes 8 rows of one output
// pixel per vector: a tap is one broadcast weight and three multiply-adds, against four
// loads, an insert and a multiply-add per 2 pixels of one row in the row-wise kernel.

// rows: 8 rows of n8 floats (n8 a multiple of 8) -> columns: n8 groups of 8 (one per row).
__attribute__((target("avx2"))) void TransposeRows(const float* rows, size_t n8, float* columns) {
  __m256 v[8];
  for (size_t j = 0; j < n8; j += 8) {
    for (size_t r = 0; r < 8; ++r) v[r] = _mm256_loadu_ps(rows + r * n8 + j);
    internal::Transpose8(v);
    for (size_t i = 0; i < 8; ++i) _mm256_storeu_ps(columns + (j + i) * 8, v[i]);
  }
}

using HorizontalBlockFn = void (*)(const float* columns, const ResampleAxis& axis, int32_t origin,
                                   int32_t taps, float* block);

// One RowBlock from the transposed columns (pixel i's channel c at columns[(3 i + c) * 8]).
// Reads max_count() pixels from every first(x): the caller pads the columns with zeros.
template <int kTaps>
__attribute__((target("avx2,fma"))) void HorizontalBlock(const float* __restrict columns,
                                                         const ResampleAxis& axis, int32_t origin,
                                                         int32_t taps, float* __restrict block) {
  const int32_t n = kTaps > 0 ? kTaps : taps;
  const size_t stride = axis.taps();
  const int32_t* __restrict first = &axis.first(0);
  const float* __restrict weights = axis.weights(0);
  for (uint32_t x = 0; x < axis.out_size(); ++x, weights += stride, block += 24) {
    const float* p = columns + size_t(first[x] - origin) * 24;
    __m256 r = _mm256_setzero_ps(), g = _mm256_setzero_ps(), b = _mm256_setzero_ps();
    for (int32_t k = 0; k < n; ++k, p += 24) {
      const __m256 w = _mm256_broadcast_ss(weights + k);
      r = _mm256_fmadd_ps(w, _mm256_loadu_ps(p), r);
      g = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 8), g);
      b = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 16), b);
    }
    _mm256_storeu_ps(block, r);
    _mm256_storeu_ps(block + 8, g);
    _mm256_storeu_ps(block + 16, b);
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

HorizontalFn BaselineHorizontal(int32_t taps){SLUICE_BY_TAPS(HorizontalBaseline, taps)}
#if defined(__x86_64__)
HorizontalBlockFn Avx2HorizontalBlock(int32_t taps) {
  SLUICE_BY_TAPS(HorizontalBlock, taps)
}
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
  float* row;          // 4 * out width floats (RGBX)
  size_t n;            // bytes of the used columns in a row
  HorizontalFn horizontal_row;
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
      VerticalRowBaseline(first_row, p.stride, p.vertical->count(y), p.vertical->weights(y), p.n,
                          p.column_sums);
      p.horizontal_row(p.column_sums, *p.horizontal, x0, taps, p.row);
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

#if defined(__x86_64__)
namespace {
// The block as 8 RGBX rows of width + 1 pixels (rows[r * 4 * (width + 1) + 4 * x + c]): a
// transpose of (R, G, B, 0) of pixels x and x + 1 gives both pixels of every row at once.
__attribute__((target("avx2"))) void BlockToRgbxAvx2(const RowBlock& block, float* rows) {
  const size_t row_floats = 4 * (size_t{block.width} + 1);
  const __m256 zero = _mm256_setzero_ps();
  for (uint32_t x = 0; x < block.width; x += 2) {
    const float* lo = block.lanes + size_t{x} * 24;
    const float* hi = x + 1 < block.width ? lo + 24 : lo;  // odd width: into the spare pixel
    __m256 v[8] = {_mm256_loadu_ps(lo), _mm256_loadu_ps(lo + 8), _mm256_loadu_ps(lo + 16), zero,
                   _mm256_loadu_ps(hi), _mm256_loadu_ps(hi + 8), _mm256_loadu_ps(hi + 16), zero};
    internal::Transpose8(v);  // v[r] = R G B 0 of pixel x, then of pixel x + 1, in row r
    for (uint32_t r = 0; r < block.rows; ++r) {
      _mm256_storeu_ps(rows + r * row_floats + 4 * size_t{x}, v[r]);
    }
  }
}
}  // namespace
#endif

void RowSink::WriteBlock(const RowBlock& block) {
  const size_t row_floats = 4 * (size_t{block.width} + 1);
  rgbx_.resize(8 * row_floats);
#if defined(__x86_64__)
  if (internal::HaveAvx2Fma()) {
    BlockToRgbxAvx2(block, rgbx_.data());
    for (uint32_t r = 0; r < block.rows; ++r) WriteRow(block.y0 + r, &rgbx_[r * row_floats]);
    return;
  }
#endif
  for (uint32_t r = 0; r < block.rows; ++r) {
    float* rgbx = &rgbx_[r * row_floats];
    for (uint32_t x = 0; x < block.width; ++x) {
      for (uint32_t c = 0; c < 3; ++c) rgbx[4 * x + c] = block.lanes[(x * 3 + c) * 8 + r];
      rgbx[4 * x + 3] = 0.0f;
    }
    WriteRow(block.y0 + r, rgbx);
  }
}

void Resampler::Run(const uint8_t* pixels, size_t stride, const ResampleAxis& horizontal,
                    const ResampleAxis& vertical, RowSink* sink) {
#if defined(__x86_64__)
  if (internal::HaveAvx2Fma()) return RunBlocks(pixels, stride, horizontal, vertical, sink);
#endif
  const size_t n = size_t(horizontal.hi() - horizontal.lo()) * 3;
  // Padding read by HorizontalRow's fixed tap count and fourth lane: zero weights times
  // finite zeros, so it never changes a sum.
  const size_t padding = size_t(horizontal.max_count()) * 3 + 1;
  column_sums_.resize(n + padding);
  std::fill(column_sums_.begin() + n, column_sums_.end(), 0.0f);
  row_.resize(size_t{horizontal.out_size()} * 4);
  Pass pass{pixels,      stride, &horizontal,
            &vertical,   sink,   column_sums_.data(),
            row_.data(), n,      BaselineHorizontal(horizontal.max_count())};
  Rows(pass);
}

void Resampler::RunBlocks(const uint8_t* pixels, size_t stride, const ResampleAxis& horizontal,
                          const ResampleAxis& vertical, RowSink* sink) {
#if defined(__x86_64__)
  const int32_t x0 = horizontal.lo();
  const size_t n = size_t(horizontal.hi() - horizontal.lo()) * 3;
  const size_t n8 = (n + 7) / 8 * 8;
  // Zeros past the used columns: the horizontal kernel's fixed tap count reads up to
  // max_count() pixels past a first(x) (with zero weights).
  const size_t padding = size_t(horizontal.max_count()) * 3;
  // (Only the padding is cleared: everything else is written before it is read, except the
  // lanes of rows past the end of the last block, which hold earlier, finite, values.)
  rows8_.resize(8 * n8);
  for (size_t r = 0; r < 8; ++r)
    std::fill(rows8_.data() + r * n8 + n, rows8_.data() + (r + 1) * n8, 0.0f);
  columns8_.resize((n8 + padding) * 8);
  std::fill(columns8_.begin() + n8 * 8, columns8_.end(), 0.0f);
  block_.resize(size_t{horizontal.out_size()} * 24);
  const HorizontalBlockFn horizontal_block = Avx2HorizontalBlock(horizontal.max_count());
  for (uint32_t y0 = 0; y0 < vertical.out_size(); y0 += 8) {
    const uint32_t rows = std::min(8u, vertical.out_size() - y0);
    for (uint32_t r = 0; r < rows; ++r) {
      float* out = rows8_.data() + r * n8;
      const uint32_t y = y0 + r;
      if (vertical.count(y) == 0 || n == 0) {
        std::fill(out, out + n, 0.0f);
        continue;
      }
      const uint8_t* first_row = pixels + vertical.first(y) * stride + size_t(x0) * 3;
      VerticalRowAvx2(first_row, stride, vertical.count(y), vertical.weights(y), n, out);
    }
    TransposeRows(rows8_.data(), n8, columns8_.data());
    horizontal_block(columns8_.data(), horizontal, x0, horizontal.max_count(), block_.data());
    sink->WriteBlock(RowBlock{y0, rows, horizontal.out_size(), block_.data()});
  }
#else
  (void)pixels, (void)stride, (void)horizontal, (void)vertical, (void)sink;
#endif
}

}  // namespace sluice::vision

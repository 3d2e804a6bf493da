#include "sluice/vision/resample.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace sluice::vision {
namespace {

// Pillow's bilinear filter: a triangle of support 1.
double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// The vertical pass for one output row: out[i] = sum_k w[k] * row(first + k)[i] for the n
// bytes of the used columns. Loops over whole rows so they vectorise.
void VerticalRow(const uint8_t* first_row, size_t stride, int32_t count, const float* w,
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

// The horizontal pass for one output row of interleaved RGB floats.
void HorizontalRow(const float* __restrict in, const ResampleAxis& axis, int32_t origin,
                   float* __restrict out) {
  for (uint32_t x = 0; x < axis.out_size(); ++x) {
    const float* p = in + 3 * (axis.first(x) - origin);
    const float* w = axis.weights(x);
    float r = 0, g = 0, b = 0;
    for (int32_t k = 0; k < axis.count(x); ++k, p += 3) {
      r += w[k] * p[0];
      g += w[k] * p[1];
      b += w[k] * p[2];
    }
    out[3 * x] = r;
    out[3 * x + 1] = g;
    out[3 * x + 2] = b;
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
  const int32_t x0 = horizontal.lo();
  const size_t n = size_t(horizontal.hi() - x0) * 3;
  column_sums_.resize(n);
  row_.resize(size_t{horizontal.out_size()} * 3);
  for (uint32_t y = 0; y < vertical.out_size(); ++y) {
    if (vertical.count(y) == 0 || n == 0) {
      std::fill(row_.begin(), row_.end(), 0.0f);
    } else {
      const uint8_t* first_row = pixels + vertical.first(y) * stride + size_t(x0) * 3;
      VerticalRow(first_row, stride, vertical.count(y), vertical.weights(y), n,
                  column_sums_.data());
      HorizontalRow(column_sums_.data(), horizontal, x0, row_.data());
    }
    sink->WriteRow(y, row_.data());
  }
}

}  // namespace sluice::vision

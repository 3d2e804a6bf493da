// Bilinear resampling with antialiasing, as Pillow's ImagingResample does it.
//
// Each output pixel is a weighted sum of input pixels under a triangle filter centred on it;
// when shrinking, the filter is widened by the downscale factor so that every input pixel
// contributes (antialiasing). The filter is separable: one ResampleAxis per axis, computed
// once per image, then one vertical and one horizontal pass. The coefficients follow
// Pillow's precompute_coeffs() exactly (same centres, support, rounding of the bounds and
// normalisation), so for the same box the result matches `img.resize(size, BILINEAR,
// box=box)` up to rounding (Pillow rounds to 8 bits between the passes; we keep floats).
// See docs/vision.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::vision {

// The coefficients of one axis: output pixel i is the sum over k < count(i) of
// weights(i)[k] * input[first(i) + k].
class ResampleAxis {
 public:
  // Resamples the span [box0, box1) of an axis of `in_size` pixels into `out_size` pixels.
  // Requires 0 <= box0 < box1 <= in_size and out_size > 0. Like Pillow, the box is rounded
  // to float precision first.
  void Compute(uint32_t in_size, double box0, double box1, uint32_t out_size);

  // Renumbers input pixels relative to `origin` (the first pixel of a decoded region).
  void Shift(uint32_t origin);

  uint32_t out_size() const { return out_size_; }
  uint32_t taps() const { return taps_; }  // weights stored per output pixel
  const int32_t& first(uint32_t i) const { return first_[i]; }
  int32_t count(uint32_t i) const { return count_[i]; }
  int32_t max_count() const { return max_count_; }  // <= taps()
  const float* weights(uint32_t i) const { return &weights_[size_t{i} * taps_]; }
  // The input pixels any output pixel uses: [lo(), hi()).
  int32_t lo() const { return lo_; }
  int32_t hi() const { return hi_; }

 private:
  uint32_t out_size_ = 0;
  uint32_t taps_ = 0;
  int32_t lo_ = 0, hi_ = 0;
  int32_t max_count_ = 0;
  std::vector<int32_t> first_;
  std::vector<int32_t> count_;
  std::vector<float> weights_;
};

// A block of up to 8 resampled output rows in the layout the AVX2 kernel produces: for
// output column x and channel c, 8 floats, one per row: value(x, y0 + r, c) =
// lanes[(x * 3 + c) * 8 + r] for r < rows (lanes past `rows` are unspecified).
struct RowBlock {
  uint32_t y0 = 0;
  uint32_t rows = 0;
  uint32_t width = 0;
  const float* lanes = nullptr;
};

// Receives the resampled image, values R, G, B on the 0..255 scale (unrounded), either one
// row at a time (`rgbx` holds 4 * width floats: R, G, B and one unused lane per pixel) or a
// RowBlock at a time (the default passes the block's rows on to WriteRow).
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void WriteRow(uint32_t y, const float* rgbx) = 0;
  virtual void WriteBlock(const RowBlock& block);

 private:
  std::vector<float> rgbx_;  // the default WriteBlock's row
};

// Runs the two passes. Holds the intermediate rows, so one Resampler per thread, reused.
class Resampler {
 public:
  // `pixels` is packed RGB8 with `stride` bytes per row, indexed as the axes say (after
  // Shift, relative to the region's origin). Vertical pass first: it is the one that
  // vectorises, and it shrinks the row count the horizontal pass works on.
  void Run(const uint8_t* pixels, size_t stride, const ResampleAxis& horizontal,
           const ResampleAxis& vertical, RowSink* sink);

 private:
  // The AVX2 version: 8 output rows at a time, handed to the sink as RowBlocks.
  void RunBlocks(const uint8_t* pixels, size_t stride, const ResampleAxis& horizontal,
                 const ResampleAxis& vertical, RowSink* sink);

  std::vector<float> column_sums_;  // one row: the vertical pass over the used columns
  std::vector<float> row_;          // one output row, RGBX
  std::vector<float> rows8_;        // AVX2: 8 rows of the vertical pass
  std::vector<float> columns8_;     // AVX2: the same, transposed (8 rows per column)
  std::vector<float> block_;        // AVX2: the RowBlock of the horizontal pass
};

}  // namespace sluice::vision

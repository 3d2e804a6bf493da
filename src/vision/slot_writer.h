// Internal: the final write of ImageTransform. Turns resampled RGB rows into one batch slot
// in the requested dtype and layout, mirroring for a flip and filling padding, with the
// Normalize arithmetic fused in.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sluice/vision/ops.h"
#include "sluice/vision/resample.h"
#include "sluice/vision/transform.h"

namespace sluice::vision::internal {

// value = pixel * scale[c] + bias[c] for float dtypes (pixel on the 0..255 scale);
// padding pixels get pad[c]. uint8 ignores all three and rounds the pixel.
struct PixelMap {
  std::array<float, 3> scale{}, bias{}, pad{};
};

// What SlotWriter applies to each row: value = pixel * scale[c] + bias[c], mirrored when
// flipping.
struct RowMap {
  std::array<float, 3> scale{}, bias{};
  bool flip = false;
};

// Reusable row buffer of a SlotWriter (kept in DecodeScratch).
struct SlotRows {
  std::vector<float> values;
  std::vector<float> block;  // WriteBlock: up to 8 rows of values
};

// `out` must be aligned to the dtype's size (the slot is written through typed pointers).
class SlotWriter final : public RowSink {
 public:
  SlotWriter(const OutputSpec& spec, const PixelMap& map, const CropPlan& plan, void* out,
             SlotRows* rows);

  // Writes the padding value over the whole slot; call before the rows when plan.padded().
  void FillPadding();
  // Row y of the content rectangle, RGBX, in source (unmirrored) order.
  void WriteRow(uint32_t y, const float* rgbx) override;
  // NCHW with AVX2: transposes the block straight into planar rows; otherwise row by row.
  void WriteBlock(const RowBlock& block) override;

 private:
  // How rows `width` wide go into the slot: with 32- or 64-byte non-temporal stores (float32
  // NCHW, AVX2 or AVX-512F, aligned slot, rows and content) or not straight (kNone).
  enum class SlotStores { kNone, kYmm, kZmm };
  SlotStores Streams(size_t width) const;
  // The block straight into the slot (stores_ != kNone).
  void StreamBlock(const RowBlock& block);
  // Stores n values (already in output order) at element offset `element` of the slot.
  void Store(const float* values, size_t n, size_t element);

  OutputSpec spec_;
  PixelMap map_;
  CropPlan plan_;
  RowMap row_map_;
  uint8_t* out_;
  SlotRows* rows_;
  SlotStores stores_;  // Streams(content width), for the blocks of the content (that wide)
};

// Call once a slot is complete, before it is handed to another thread (orders the
// non-temporal stores SlotWriter uses).
void FinishSlot();

// IEEE binary16 from binary32, round to nearest even (F16C when the CPU has it).
void FloatsToHalves(const float* in, uint16_t* out, size_t n);

}  // namespace sluice::vision::internal

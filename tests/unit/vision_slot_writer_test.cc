// SlotWriter: a RowBlock (the AVX2 resampler's output) and the same rows handed over one at
// a time (the portable resampler's output) fill a slot identically, for every layout,
// dtype, flip and width, aligned or not. On an AVX2 machine this is what keeps the portable
// row path tested.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "vision/slot_writer.h"

namespace sluice::vision::internal {
namespace {

enum class Mode { kRows, kBlock };

std::vector<uint8_t> Fill(const OutputSpec& spec, const CropPlan& plan, const RowBlock& block,
                          Mode mode, size_t misalign) {
  const size_t bytes = size_t{plan.canvas_width} * plan.canvas_height * 3 * 4;
  std::vector<uint8_t> storage(bytes + 64 + misalign, 0);
  uint8_t* out = storage.data();
  while (reinterpret_cast<uintptr_t>(out) % 64 != 0) ++out;
  out += misalign;
  const PixelMap map{{1 / 58.4f, 1 / 57.1f, 1 / 57.4f}, {-2.1f, -2.0f, -1.8f}, {0, 0, 0}};
  SlotRows rows;
  SlotWriter writer(spec, map, plan, out, &rows);
  if (mode == Mode::kRows) {
    std::vector<float> rgbx(size_t{block.width} * 4);
    for (uint32_t r = 0; r < block.rows; ++r) {
      for (uint32_t x = 0; x < block.width; ++x) {
        for (uint32_t c = 0; c < 3; ++c) rgbx[4 * x + c] = block.lanes[(x * 3 + c) * 8 + r];
        rgbx[4 * x + 3] = 0;
      }
      writer.WriteRow(block.y0 + r, rgbx.data());
    }
  } else {
    writer.WriteBlock(block);
  }
  FinishSlot();
  return std::vector<uint8_t>(out, out + bytes);
}

TEST(SlotWriter, BlocksAndRowsWriteTheSameSlot) {
  for (uint32_t width : {1u, 7u, 8u, 13u, 16u, 24u, 32u, 40u, 41u, 47u}) {
    std::vector<float> lanes(size_t{width} * 24);
    for (size_t i = 0; i < lanes.size(); ++i) lanes[i] = static_cast<float>((i * 37) % 256);
    for (DType dtype : {DType::kUInt8, DType::kFloat16, DType::kFloat32}) {
      for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
        for (bool flip : {false, true}) {
          // 64-byte aligned (AVX-512 line stores), 32 (AVX2 stores), 4 (through rows)
          for (size_t misalign : {size_t{0}, size_t{32}, size_t{4}}) {
            CropPlan plan;
            plan.canvas_width = plan.content_width = width;
            plan.canvas_height = plan.content_height = 6;
            plan.flip = flip;
            const RowBlock block{0, 6, width, lanes.data()};
            const OutputSpec spec{dtype, layout};
            const std::vector<uint8_t> by_rows = Fill(spec, plan, block, Mode::kRows, misalign);
            EXPECT_EQ(by_rows, Fill(spec, plan, block, Mode::kBlock, misalign))
                << "width " << width << " dtype " << static_cast<int>(dtype) << " layout "
                << static_cast<int>(layout) << " flip " << flip << " misalign " << misalign;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sluice::vision::internal

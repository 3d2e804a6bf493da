// libFuzzer target: decode + crop + resize + write of arbitrary bytes, through every kind of
// op pipeline (random crop with DCT scaling, resize + centre crop, padding crop, full decode).
// Any crash, sanitizer report, leak or timeout is a bug: bad input must only produce a Status.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sluice/vision/decode.h"
#include "sluice/vision/transform.h"

namespace {

using namespace sluice;
using namespace sluice::vision;

// Caps far below the defaults so the fuzzer spends its time on parsing, not on decoding the
// large-but-legal images a few header bytes can promise.
TransformOptions FuzzOptions() {
  TransformOptions options;
  options.decode.max_pixels = 1 << 22;
  options.decode.max_decoded_bytes = 64 << 20;
  options.decode.max_scans = 64;
  return options;
}

std::vector<ImageTransform> MakeTransforms() {
  const Normalize imagenet{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  std::vector<ImageTransform> out;
  out.push_back(*ImageTransform::Make({RandomResizedCrop{24, 24}, RandomHorizontalFlip{}, imagenet},
                                      {DType::kFloat32, Layout::kNCHW}, FuzzOptions()));
  out.push_back(*ImageTransform::Make({Resize{20}, CenterCrop{16, 16}},
                                      {DType::kUInt8, Layout::kNHWC}, FuzzOptions()));
  out.push_back(*ImageTransform::Make({CenterCrop{40, 8}, imagenet},
                                      {DType::kFloat16, Layout::kNHWC}, FuzzOptions()));
  return out;
}

volatile uint32_t g_sink;  // keeps the read loop below from being optimised away

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<ImageTransform> transforms = MakeTransforms();
  static DecodeScratch scratch;  // reused, as in a worker thread: state must not leak across inputs
  static std::vector<uint8_t> out(1 << 16);
  const ByteView bytes(reinterpret_cast<const char*>(data), size);
  for (size_t i = 0; i < transforms.size(); ++i) {
    SampleRng rng = SampleRng::ForSample(size, i, size > 0 ? data[0] : 0);
    (void)transforms[i].Apply(bytes, rng, out.data(), &scratch);
  }
  ImageDecoder decoder(FuzzOptions().decode);
  DecodedImage image;
  if (decoder.DecodeAll(bytes, &image).ok()) {
    // Touch every decoded byte so a short buffer shows up under ASan.
    uint32_t sum = 0;
    for (uint32_t r = 0; r < image.height; ++r) {
      for (size_t x = 0; x < size_t{image.width} * 3; ++x) sum += image.row(r)[x];
    }
    g_sink = sum;
  }
  return 0;
}

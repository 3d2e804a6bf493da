// Drives sluice's vision kernels from the command line for tests/python/test_vision_pil.py,
// which compares the results with Pillow and torchvision.
//
//   vision_tool decode IN OUT                 whole image, RGB8 rows; prints "W H"
//   vision_tool resize IN X0 Y0 X1 Y1 W H OUT [--no-dct]
//                                             box -> WxH (Pillow's resize(box=...)), RGB8;
//                                             prints the DCT scale denominator used
//   vision_tool rrc W H N KEY                 N RandomResizedCrop(224) windows on a WxH image
//                                             from SampleRng(KEY): "top left height width"
//   vision_tool eval IN OUT                   Resize(256) + CenterCrop(224), RGB8 (HWC)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/vision/decode.h"
#include "sluice/vision/transform.h"

namespace {

using namespace sluice;
using namespace sluice::vision;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "vision_tool: cannot read " << path << "\n";
    std::exit(2);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out) {
    std::cerr << "vision_tool: cannot write " << path << "\n";
    std::exit(2);
  }
}

int Fail(const Status& s) {
  std::cerr << "vision_tool: " << s.ToString() << "\n";
  return 1;
}

int Decode(const std::string& in, const std::string& out) {
  const std::string bytes = ReadFile(in);
  ImageDecoder decoder;
  DecodedImage img;
  Status s = decoder.DecodeAll(bytes, &img);
  if (!s.ok()) return Fail(s);
  std::vector<uint8_t> rgb(size_t{img.width} * img.height * 3);
  for (uint32_t r = 0; r < img.height; ++r) {
    std::memcpy(&rgb[size_t{r} * img.width * 3], img.row(r), size_t{img.width} * 3);
  }
  WriteFile(out, rgb.data(), rgb.size());
  std::cout << img.width << " " << img.height << "\n";
  return 0;
}

int ResizeBox(char** argv, int argc) {
  const std::string bytes = ReadFile(argv[2]);
  CropPlan plan;
  plan.box_x0 = std::atof(argv[3]);
  plan.box_y0 = std::atof(argv[4]);
  plan.box_x1 = std::atof(argv[5]);
  plan.box_y1 = std::atof(argv[6]);
  plan.canvas_width = plan.content_width = static_cast<uint32_t>(std::atoi(argv[7]));
  plan.canvas_height = plan.content_height = static_cast<uint32_t>(std::atoi(argv[8]));
  TransformOptions options;
  options.dct_scaling = !(argc > 10 && std::string(argv[10]) == "--no-dct");
  auto t = ImageTransform::Make({Resize{0, plan.canvas_height, plan.canvas_width}},
                                {DType::kUInt8, Layout::kNHWC}, options);
  if (!t.ok()) return Fail(t.status());
  std::vector<uint8_t> out(t->output_bytes());
  DecodeScratch scratch;
  Status s = t->Render(bytes, plan, out.data(), &scratch);
  if (!s.ok()) return Fail(s);
  WriteFile(argv[9], out.data(), out.size());
  std::cout << (options.dct_scaling ? ChooseDctScale(plan) : 1) << "\n";
  return 0;
}

int SampleWindows(char** argv) {
  const auto w = static_cast<uint32_t>(std::atoi(argv[2]));
  const auto h = static_cast<uint32_t>(std::atoi(argv[3]));
  const long n = std::atol(argv[4]);
  SampleRng rng(std::strtoull(argv[5], nullptr, 10));
  for (long i = 0; i < n; ++i) {
    const CropWindow win = SampleRandomResizedCrop(w, h, RandomResizedCrop{}, rng);
    std::printf("%u %u %u %u\n", win.top, win.left, win.height, win.width);
  }
  return 0;
}

int Eval(const std::string& in, const std::string& out_path) {
  auto t =
      ImageTransform::Make({Resize{256}, CenterCrop{224, 224}}, {DType::kUInt8, Layout::kNHWC});
  if (!t.ok()) return Fail(t.status());
  std::vector<uint8_t> out(t->output_bytes());
  DecodeScratch scratch;
  SampleRng rng(0);
  Status s = t->Apply(ReadFile(in), rng, out.data(), &scratch);
  if (!s.ok()) return Fail(s);
  WriteFile(out_path, out.data(), out.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "decode" && argc == 4) return Decode(argv[2], argv[3]);
  if (cmd == "resize" && (argc == 10 || argc == 11)) return ResizeBox(argv, argc);
  if (cmd == "rrc" && argc == 6) return SampleWindows(argv);
  if (cmd == "eval" && argc == 4) return Eval(argv[2], argv[3]);
  std::cerr << "usage: see the comment at the top of tests/tools/vision_tool.cc\n";
  return 2;
}

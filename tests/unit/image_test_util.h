// Encoded test images made in memory: JPEG through TurboJPEG, PNG through libpng's simplified
// API, of a smooth gradient with some texture (so the encoded data is not trivially short).
#pragma once

#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <string>
#include <vector>

namespace sluice::vision::testing {

inline std::vector<unsigned char> Pixels(int width, int height, int channels) {
  std::vector<unsigned char> px(static_cast<size_t>(width) * height * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        px[(static_cast<size_t>(y) * width + x) * channels + c] =
            static_cast<unsigned char>((x * 3 + y * 5 + c * 70 + (x * y) % 17) & 0xff);
      }
    }
  }
  return px;
}

inline std::string MakeJpeg(int width, int height, bool gray = false) {
  tjhandle tj = tjInitCompress();
  auto px = Pixels(width, height, gray ? 1 : 3);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(tj, px.data(), width, 0, height, gray ? TJPF_GRAY : TJPF_RGB, &out, &size,
                       gray ? TJSAMP_GRAY : TJSAMP_420, 90, 0);
  EXPECT_EQ(rc, 0) << tjGetErrorStr2(tj);
  std::string jpeg(reinterpret_cast<char*>(out), size);
  tjFree(out);
  tjDestroy(tj);
  return jpeg;
}

inline std::string MakePng(int width, int height, png_uint_32 format) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  auto px = Pixels(width, height, PNG_IMAGE_SAMPLE_CHANNELS(format));
  png_alloc_size_t size = 0;
  EXPECT_NE(png_image_write_to_memory(&image, nullptr, &size, 0, px.data(), 0, nullptr), 0);
  std::string png(size, '\0');
  EXPECT_NE(png_image_write_to_memory(&image, png.data(), &size, 0, px.data(), 0, nullptr), 0)
      << image.message;
  png.resize(size);
  return png;
}

}  // namespace sluice::vision::testing

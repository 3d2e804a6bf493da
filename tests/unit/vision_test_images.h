// Test images made at test time: synthetic pixels, encoded with libjpeg / libpng into memory.
// Header-only so every vision_*_test.cc can use it (the test glob compiles only *_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>

#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sluice::vision::testing {

// A smooth colourful scene with some edges: compresses like a photo, varies in x and y.
inline std::vector<uint8_t> MakeRgb(uint32_t width, uint32_t height, uint32_t seed = 1) {
  std::vector<uint8_t> rgb(size_t{width} * height * 3);
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(size_t{y} * width + x) * 3];
      const double u = static_cast<double>(x) / width, v = static_cast<double>(y) / height;
      p[0] = static_cast<uint8_t>(127 + 120 * std::sin(6.0 * u + seed));
      p[1] = static_cast<uint8_t>(127 + 120 * std::cos(5.0 * v + 2.0 * u));
      p[2] = static_cast<uint8_t>(((x / 16 + y / 16 + seed) % 2) ? 200 : 40);
    }
  }
  return rgb;
}

// Only low frequencies (a few periods across the image), like a downscaled photo: box and
// triangle filters agree on it, so it isolates resampling geometry from filter shape.
inline std::vector<uint8_t> MakeSmoothRgb(uint32_t width, uint32_t height) {
  std::vector<uint8_t> rgb(size_t{width} * height * 3);
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(size_t{y} * width + x) * 3];
      const double u = static_cast<double>(x) / width, v = static_cast<double>(y) / height;
      p[0] = static_cast<uint8_t>(127 + 120 * std::sin(9.0 * u + 2.0 * v));
      p[1] = static_cast<uint8_t>(127 + 120 * std::cos(7.0 * v - 3.0 * u));
      p[2] = static_cast<uint8_t>(127 + 100 * std::sin(11.0 * u * v));
    }
  }
  return rgb;
}

struct JpegSpec {
  uint32_t width = 64, height = 48;
  int components = 3;  // 1 gray, 3 RGB (stored YCbCr), 4 CMYK (stored Adobe-inverted)
  int quality = 95;
  bool progressive = false;
  int h_samp = 2, v_samp = 2;  // luma sampling factors: 2x2 = 4:2:0, 2x1 = 4:2:2, 1x1 = 4:4:4
};

// Encodes `pixels` (components bytes per pixel) to a JPEG in memory. Aborts on error (tests).
inline std::string EncodeJpeg(const std::vector<uint8_t>& pixels, const JpegSpec& spec) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = spec.width;
  cinfo.image_height = spec.height;
  cinfo.input_components = spec.components;
  cinfo.in_color_space = spec.components == 1   ? JCS_GRAYSCALE
                         : spec.components == 4 ? JCS_CMYK
                                                : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, spec.quality, TRUE);
  if (spec.components == 3) {
    cinfo.comp_info[0].h_samp_factor = spec.h_samp;
    cinfo.comp_info[0].v_samp_factor = spec.v_samp;
  }
  if (spec.progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = size_t{spec.width} * spec.components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&pixels[cinfo.next_scanline * stride]);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buffer), size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return out;
}

inline std::string EncodeJpegRgb(uint32_t width, uint32_t height, JpegSpec spec = {}) {
  spec.width = width;
  spec.height = height;
  spec.components = 3;
  return EncodeJpeg(MakeRgb(width, height), spec);
}

struct PngSpec {
  uint32_t width = 16, height = 12;
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<png_color> palette;      // for PNG_COLOR_TYPE_PALETTE
  std::vector<png_byte> transparency;  // tRNS for palette images
};

// Encodes raw rows (big-endian for 16-bit, packed for < 8 bits) to a PNG in memory.
inline std::string EncodePng(const std::vector<uint8_t>& raw, const PngSpec& spec) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::string out;
  if (setjmp(png_jmpbuf(png))) std::abort();
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, size_t n) {
        static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<char*>(data), n);
      },
      nullptr);
  png_set_IHDR(png, info, spec.width, spec.height, spec.bit_depth, spec.color_type,
               spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!spec.palette.empty()) {
    png_set_PLTE(png, info, spec.palette.data(), static_cast<int>(spec.palette.size()));
  }
  if (!spec.transparency.empty()) {
    png_set_tRNS(png, info, spec.transparency.data(), static_cast<int>(spec.transparency.size()),
                 nullptr);
  }
  png_write_info(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  std::vector<png_bytep> rows(spec.height);
  for (uint32_t y = 0; y < spec.height; ++y) {
    rows[y] = const_cast<uint8_t*>(&raw[y * row_bytes]);
  }
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

inline double MeanAbsDiff(const uint8_t* a, const uint8_t* b, size_t n) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += std::abs(int{a[i]} - int{b[i]});
  return total / static_cast<double>(n);
}

// Offset of the first JPEG marker `code` (0xFF code), or npos.
inline size_t FindMarker(const std::string& jpeg, uint8_t code) {
  for (size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (static_cast<uint8_t>(jpeg[i]) == 0xFF && static_cast<uint8_t>(jpeg[i + 1]) == code) {
      return i;
    }
  }
  return std::string::npos;
}

// Rewrites the frame size in the SOF0 header (marker, length, precision, height, width).
inline std::string WithJpegSize(std::string jpeg, uint16_t width, uint16_t height) {
  const size_t sof = FindMarker(jpeg, 0xC0);
  EXPECT_NE(sof, std::string::npos);
  jpeg[sof + 5] = static_cast<char>(height >> 8);
  jpeg[sof + 6] = static_cast<char>(height & 0xFF);
  jpeg[sof + 7] = static_cast<char>(width >> 8);
  jpeg[sof + 8] = static_cast<char>(width & 0xFF);
  return jpeg;
}

}  // namespace sluice::vision::testing

// Images/s of sluice's image kernel on encoded JPEGs held in memory:
//   train:  decode + RandomResizedCrop(224) + RandomHorizontalFlip + Normalize -> float32
//           NCHW slots of a batch of 256 (one batch buffer per worker thread)
//   decode: full-size decode only (compare with tjbench, libjpeg-turbo's own ceiling)
// with 1..N std::thread workers pulling sample indices from a shared counter, each with its
// own DecodeScratch, as the pipeline's decode_image stage will. bench/vision/run.py runs this
// next to torchvision, OpenCV and tjbench and prints the ratio table.
//
//   vision_bench --images DIR [--threads 1,2] [--passes 2] [--mode train|decode] [--limit N]
// Prints one JSON object per (mode, threads) line.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/pipeline/tensor.h"
#include "sluice/vision/decode.h"
#include "sluice/vision/transform.h"

namespace {

using namespace sluice;
using namespace sluice::vision;
using sluice::pipeline::AllocateBuffer;
using sluice::pipeline::BufferRef;

struct Args {
  std::string images;
  std::vector<int> threads = {1, 2};
  int passes = 2;
  std::string mode = "train";
  size_t limit = 0;
  bool dct_scaling = true;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "missing value for " << k << "\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--images") {
      a.images = next();
    } else if (k == "--threads") {
      a.threads.clear();
      std::stringstream ss(next());
      for (std::string t; std::getline(ss, t, ',');) a.threads.push_back(std::stoi(t));
    } else if (k == "--passes") {
      a.passes = std::stoi(next());
    } else if (k == "--mode") {
      a.mode = next();
    } else if (k == "--limit") {
      a.limit = std::stoul(next());
    } else if (k == "--no-dct") {
      a.dct_scaling = false;
    } else {
      std::cerr << "unknown argument " << k << "\n";
      std::exit(2);
    }
  }
  if (a.images.empty() || (a.mode != "train" && a.mode != "decode")) {
    std::cerr << "usage: vision_bench --images DIR [--threads 1,2] [--passes 2] "
                 "[--mode train|decode] [--limit N] [--no-dct]\n";
    std::exit(2);
  }
  return a;
}

std::vector<std::string> LoadImages(const std::string& dir, size_t limit) {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".JPEG")) {
      paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  if (limit != 0 && paths.size() > limit) paths.resize(limit);
  std::vector<std::string> images;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    images.push_back(ss.str());
  }
  return images;
}

constexpr size_t kBatch = 256;

// One worker thread's state, built (and its batch buffer touched) before the clock starts.
struct Worker {
  explicit Worker(size_t slot_bytes) : batch(AllocateBuffer(kBatch * slot_bytes)) {
    std::fill_n(batch.data(), kBatch * slot_bytes, 0);
  }
  DecodeScratch scratch;
  ImageDecoder decoder;
  // One batch of 256 output slots, reused like a pipeline's, aligned like one (64 bytes).
  BufferRef batch;
  uint64_t slot = 0;
};

// One worker's loop: samples [0, total) are shared out through `next`.
void Work(const Args& args, const ImageTransform& transform, const std::vector<std::string>& images,
          uint64_t total, std::atomic<uint64_t>* next, std::atomic<uint64_t>* errors, Worker* w) {
  const size_t slot_bytes = transform.output_bytes();
  for (;;) {
    const uint64_t i = next->fetch_add(1, std::memory_order_relaxed);
    if (i >= total) return;
    const std::string& bytes = images[i % images.size()];
    Status s;
    if (args.mode == "train") {
      SampleRng rng = SampleRng::ForSample(/*seed=*/1, /*epoch=*/i / images.size(), i);
      s = transform.Apply(
          bytes, rng,
          reinterpret_cast<uint8_t*>(w->batch.data()) + (w->slot++ % kBatch) * slot_bytes,
          &w->scratch);
    } else {
      DecodedImage image;
      s = w->decoder.DecodeAll(bytes, &image);
    }
    if (!s.ok()) errors->fetch_add(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  const std::vector<std::string> images = LoadImages(args.images, args.limit);
  if (images.empty()) {
    std::cerr << "no .jpg files under " << args.images << "\n";
    return 1;
  }
  TransformOptions options;
  options.dct_scaling = args.dct_scaling;
  auto transform =
      ImageTransform::Make({RandomResizedCrop{}, RandomHorizontalFlip{},
                            Normalize{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}},
                           {DType::kFloat32, Layout::kNCHW}, options);
  if (!transform.ok()) {
    std::cerr << transform.status().ToString() << "\n";
    return 1;
  }
  for (int threads : args.threads) {
    std::vector<std::unique_ptr<Worker>> workers;
    const size_t slot_bytes = args.mode == "train" ? transform->output_bytes() : 0;
    for (int t = 0; t < threads; ++t) workers.push_back(std::make_unique<Worker>(slot_bytes));
    // Warm-up: page in the images, grow every scratch buffer.
    std::atomic<uint64_t> next{0}, errors{0};
    for (auto& w : workers) {
      next = 0;
      Work(args, *transform, images, std::min<uint64_t>(images.size(), 100), &next, &errors,
           w.get());
    }

    const uint64_t total = uint64_t(images.size()) * args.passes;
    next = 0;
    errors = 0;
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back(Work, std::cref(args), std::cref(*transform), std::cref(images), total,
                        &next, &errors, workers[t].get());
    }
    for (auto& t : pool) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "{\"tool\": \"sluice\", \"mode\": \"%s\", \"threads\": %d, \"images\": %llu, "
        "\"seconds\": %.3f, \"images_per_s\": %.1f, \"errors\": %llu, \"dct_scaling\": %s}\n",
        args.mode.c_str(), threads, static_cast<unsigned long long>(total), seconds,
        total / seconds, static_cast<unsigned long long>(errors.load()),
        args.dct_scaling ? "true" : "false");
    std::fflush(stdout);
  }
  return 0;
}

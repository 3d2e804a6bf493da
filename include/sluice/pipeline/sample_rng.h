// SampleRng: the per-sample random generator handed to map functions. Seeded from
// (seed, epoch, global position of the record in the epoch's order), so augmentation is
// reproducible and independent of thread counts, world size and restore points.
#pragma once

#include <cstdint>

#include "sluice/pipeline/permutation.h"  // Mix64, CombineKey

namespace sluice::pipeline {

// xoshiro256** seeded through SplitMix64. Small, fast, good statistical quality.
class SampleRng {
 public:
  static constexpr uint64_t kTag = 0x73616d706c650005ULL;  // "sample", after docs/order.md's

  SampleRng(uint64_t seed, uint64_t epoch, uint64_t position) {
    uint64_t x = CombineKey(CombineKey(CombineKey(kTag, seed), epoch), position);
    for (uint64_t& w : s_) w = x = Mix64(x + 0x9e3779b97f4a7c15ULL);  // SplitMix64 stream
  }
  uint64_t Next() {
    uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n) (n > 0), without modulo bias worth caring about for n << 2^64.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace sluice::pipeline

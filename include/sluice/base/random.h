// SampleRng: the per-sample random number generator of augmentations.
//
// docs/architecture.md ("Global order") requires per-sample randomness to be a pure function of
// (seed, epoch, global sample index), so that resume, any world size and any thread count
// reproduce the same crops and flips. SampleRng is therefore counter-based: a 64-bit key
// derived from those three numbers, and the i-th draw is a strong mix of (key, i). There is
// no hidden global state, creating one costs a few multiplies, and two samples' streams are
// unrelated even for adjacent indices.
//
// The mix is SplitMix64's finalizer (Steele, Lea, Flood: "Fast splittable pseudorandom number
// generators", 2014), which passes BigCrush as a counter-based generator. This is not a
// cryptographic generator.
#pragma once

#include <cstdint>

namespace sluice {

// The SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijection on 64-bit words in which every
// input bit affects every output bit with probability ~1/2. SampleRng's mix, and the round
// function and key derivation of the pipeline's global order (docs/order.md).
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SampleRng {
 public:
  // A stream keyed directly by `key` (tests; use ForSample in pipelines).
  explicit SampleRng(uint64_t key) : key_(key) {}

  // The stream of one sample: `global_index` is its position in the epoch's global order
  // (RankSlice::PositionAt, docs/order.md), so the same sample gets the same crops and flips
  // whatever the world size, thread count or resume point.
  static SampleRng ForSample(uint64_t seed, uint64_t epoch, uint64_t global_index) {
    uint64_t k = Mix(seed + 0x243F6A8885A308D3ull);  // distinct offsets: digits of pi
    k = Mix(k ^ (epoch + 0x13198A2E03707344ull));
    k = Mix(k ^ (global_index + 0xA4093822299F31D0ull));
    return SampleRng(k);
  }

  // Uniform over all 64-bit values.
  uint64_t NextU64() { return Mix(key_ + kGamma * ++counter_); }

  // Uniform in [0, 1), 53 random bits.
  double NextDouble() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * NextDouble(); }

  // Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject). n must be > 0.
  uint64_t UniformInt(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(NextU64()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(NextU64()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // True with probability p (torchvision's `torch.rand(1) < p`).
  bool Bernoulli(double p) { return NextDouble() < p; }

  // Draws made so far; with the key this is the complete state.
  uint64_t draws() const { return counter_; }

 private:
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // 2^64 / golden ratio

  static uint64_t Mix(uint64_t z) { return Mix64(z); }

  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace sluice

// A keyed pseudo-random bijection on [0, n): the building block of the global sample order
// (docs/order.md). Apply(x) and Invert(y) take O(1) expected time and the object holds a few
// keys, however large n is, so an epoch's order never has to be materialised.
//
// Construction: an alternating (possibly unbalanced) Feistel network over the smallest power
// of two >= n, made to stay inside [0, n) by cycle walking. Each round XORs one half of the
// bits with a keyed hash of the other half; any such round is invertible, so the network is a
// bijection on [0, 2^bits) whatever the round function, and cycle walking turns it into a
// bijection on [0, n). The domain is < 2n, so a walk takes < 2 steps on average.
//
// Feistel networks on a handful of bits mix poorly (a 1-bit half can only be flipped or not),
// so domains of at most kTableMax elements use an exact Fisher-Yates table instead, and
// domains below 2^16 use more rounds; docs/order.md has the measurements.
//
// The result is a pure function of (n, key) on every platform: no std:: distributions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "sluice/base/random.h"  // Mix64

namespace sluice::pipeline {

// Mix64 (base/random.h), the SplitMix64 finaliser, serves as round function and key mix.
using sluice::Mix64;

// Derives a key from `key` and one more value, e.g. CombineKey(CombineKey(tag, seed), epoch).
// Order matters: CombineKey(a, b) != CombineKey(b, a) in general.
inline uint64_t CombineKey(uint64_t key, uint64_t value) {
  return Mix64(key + 0x9e3779b97f4a7c15ULL + Mix64(value ^ 0x2545f4914f6cdd1dULL));
}

class Permutation {
 public:
  static constexpr uint64_t kTableMax = 16;  // n <= this: exact Fisher-Yates table
  static constexpr int kRounds = 8;          // Feistel rounds for n > 2^16
  static constexpr int kSmallRounds = 12;    // Feistel rounds for kTableMax < n <= 2^16
  static_assert(kRounds % 2 == 0 && kSmallRounds % 2 == 0, "rounds are taken in pairs");

  Permutation() : Permutation(0, 0) {}
  Permutation(uint64_t n, uint64_t key);

  uint64_t size() const { return n_; }
  // The image of x (requires x < size(); an out-of-range x is returned unchanged).
  uint64_t Apply(uint64_t x) const;
  // Apply() of each of xs[0, n) in place (same preconditions), several at a time through the
  // network: a round's hash is a chain of dependent multiplies, and independent chains keep
  // the multiplier busy where one leaves it waiting. Eight at a time in AVX-512 registers
  // where the CPU has AVX-512DQ (chosen at run time; ~4x faster), else four.
  void ApplyMany(uint64_t* xs, size_t n) const;
  // The preimage of y (same precondition): Invert(Apply(x)) == x.
  uint64_t Invert(uint64_t y) const;

 private:
  void BuildTable(uint64_t key);
  uint64_t Encrypt(uint64_t x) const;  // one pass of the network over [0, 2^bits)
  size_t ApplyMany8(uint64_t* xs, size_t n) const;  // AVX-512: the values of whole groups of 8
  uint64_t Decrypt(uint64_t x) const;

  uint64_t n_ = 0;
  int rounds_ = 0;      // 0: the table is used
  int right_bits_ = 0;  // x = (left << right_bits_) | right
  uint64_t left_mask_ = 0;
  uint64_t right_mask_ = 0;
  std::array<uint64_t, kSmallRounds> round_keys_{};
  std::array<uint8_t, kTableMax> forward_{};  // table mode: x -> Apply(x)
  std::array<uint8_t, kTableMax> inverse_{};
};

}  // namespace sluice::pipeline

// FastDivider: n / d and n % d for a divisor fixed ahead (a loop's invariant), by a multiply
// and shifts instead of a division instruction (tens of cycles; a shuffled read divided each
// record's position by the order's lane count several times). Exact for every 64-bit n and
// divisor >= 1: the round-up method of Granlund and Montgomery ("Division by invariant
// integers using multiplication", PLDI 1994, figure 4.1).
#pragma once

#include <bit>
#include <cassert>
#include <cstdint>

namespace sluice {

class FastDivider {
 public:
  FastDivider() : FastDivider(1) {}
  explicit FastDivider(uint64_t d) : d_(d == 0 ? 1 : d) {
    assert(d != 0);
    const int l = std::bit_width(d_ - 1);  // ceil(log2 d)
    // m = floor(2^64 (2^l - d) / d) + 1, < 2^64 since 2^l - d < d.
    const unsigned __int128 two_l = static_cast<unsigned __int128>(1) << l;
    multiplier_ = static_cast<uint64_t>(((two_l - d_) << 64) / d_) + 1;
    shift1_ = l < 1 ? l : 1;
    shift2_ = l - shift1_;
  }

  uint64_t divisor() const { return d_; }
  uint64_t Divide(uint64_t n) const {
    const uint64_t t =
        static_cast<uint64_t>((static_cast<unsigned __int128>(multiplier_) * n) >> 64);
    return (t + ((n - t) >> shift1_)) >> shift2_;
  }
  uint64_t Mod(uint64_t n) const { return n - Divide(n) * d_; }

 private:
  uint64_t d_;
  uint64_t multiplier_ = 0;
  int shift1_ = 0;
  int shift2_ = 0;
};

}  // namespace sluice

#include "sluice/pipeline/permutation.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace sluice::pipeline {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // SplitMix64's stream increment

// The SplitMix64 generator: round keys and Fisher-Yates draws are its stream seeded with the key.
uint64_t NextRandom(uint64_t* state) {
  *state += kGolden;
  return Mix64(*state);
}

// A draw in [0, bound) by Lemire's multiply-shift. Without rejection the bias is at most
// bound / 2^64 (< 2^-59 for tables), far below anything a shuffle test could see.
uint64_t Below(uint64_t* state, uint64_t bound) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(NextRandom(state)) * bound) >> 64);
}

}  // namespace

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n) {
  if (n <= kTableMax) {
    BuildTable(key);
    return;
  }
  const int bits = static_cast<int>(std::bit_width(n - 1));  // >= 5, so both halves >= 2 bits
  rounds_ = bits > 16 ? kRounds : kSmallRounds;
  const int left_bits = bits / 2;
  right_bits_ = bits - left_bits;  // both halves <= 32 bits, so no shift below reaches 64
  left_mask_ = (uint64_t{1} << left_bits) - 1;
  right_mask_ = (uint64_t{1} << right_bits_) - 1;
  uint64_t state = key;
  for (int i = 0; i < rounds_; ++i) round_keys_[i] = NextRandom(&state);
}

void Permutation::BuildTable(uint64_t key) {
  for (uint64_t i = 0; i < n_; ++i) forward_[i] = static_cast<uint8_t>(i);
  uint64_t state = key;
  for (uint64_t i = n_; i > 1; --i) std::swap(forward_[i - 1], forward_[Below(&state, i)]);
  for (uint64_t i = 0; i < n_; ++i) inverse_[forward_[i]] = static_cast<uint8_t>(i);
}

// Rounds alternate: even rounds change the right half from the left, odd rounds the left from
// the right (there is an even number of rounds: the loop takes them in pairs). Each round is
// its own inverse, so Decrypt runs the same rounds backwards.
uint64_t Permutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> right_bits_;
  uint64_t right = x & right_mask_;
  for (int i = 0; i < rounds_; i += 2) {
    right ^= Mix64(left ^ round_keys_[i]) & right_mask_;
    left ^= Mix64(right ^ round_keys_[i + 1]) & left_mask_;
  }
  return (left << right_bits_) | right;
}

uint64_t Permutation::Decrypt(uint64_t x) const {
  uint64_t left = x >> right_bits_;
  uint64_t right = x & right_mask_;
  for (int i = rounds_ - 1; i > 0; i -= 2) {
    left ^= Mix64(right ^ round_keys_[i]) & left_mask_;
    right ^= Mix64(left ^ round_keys_[i - 1]) & right_mask_;
  }
  return (left << right_bits_) | right;
}

// Cycle walking: the network permutes [0, 2^bits); following x's cycle until it re-enters
// [0, n) yields a bijection on [0, n). The walk ends because x's own cycle returns to x < n,
// and since 2^bits < 2n, on average fewer than 2 steps are needed. An out-of-range x (a
// caller bug, asserted) is returned unchanged: its cycle might never enter [0, n).
uint64_t Permutation::Apply(uint64_t x) const {
  assert(x < n_);
  if (x >= n_) return x;
  if (rounds_ == 0) return forward_[x];
  do {
    x = Encrypt(x);
  } while (x >= n_);
  return x;
}

void Permutation::ApplyMany(uint64_t* xs, size_t n) const {
  if (rounds_ == 0) {
    for (size_t i = 0; i < n; ++i) xs[i] = Apply(xs[i]);
    return;
  }
  constexpr size_t kLanes = 4;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    uint64_t left[kLanes], right[kLanes];
    for (size_t k = 0; k < kLanes; ++k) {
      assert(xs[i + k] < n_);
      left[k] = xs[i + k] >> right_bits_;
      right[k] = xs[i + k] & right_mask_;
    }
    for (int r = 0; r < rounds_; r += 2) {  // Encrypt's rounds, for four values at once
      for (size_t k = 0; k < kLanes; ++k) right[k] ^= Mix64(left[k] ^ round_keys_[r]) & right_mask_;
      for (size_t k = 0; k < kLanes; ++k) left[k] ^= Mix64(right[k] ^ round_keys_[r + 1]) & left_mask_;
    }
    for (size_t k = 0; k < kLanes; ++k) {
      if (xs[i + k] >= n_) continue;  // as Apply: unchanged (its cycle may never enter)
      uint64_t y = (left[k] << right_bits_) | right[k];
      while (y >= n_) y = Encrypt(y);  // the rest of the cycle walk, one by one
      xs[i + k] = y;
    }
  }
  for (; i < n; ++i) xs[i] = Apply(xs[i]);
}

uint64_t Permutation::Invert(uint64_t y) const {
  assert(y < n_);
  if (y >= n_) return y;
  if (rounds_ == 0) return inverse_[y];
  do {
    y = Decrypt(y);
  } while (y >= n_);
  return y;
}

}  // namespace sluice::pipeline

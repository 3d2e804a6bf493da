#include "sluice/pipeline/permutation.h"

#include <algorithm>
#include <bit>
#include <cassert>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start from an "undefined" register it then reports as maybe
// uninitialized.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace {

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return has;
}

// Mix64 on eight values (vpmullq: AVX-512DQ).
__attribute__((target("avx512f,avx512dq"))) inline __m512i Mix64x8(__m512i z) {
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
  z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ull)));
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
  z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBull)));
  return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

// One pass of the network (Encrypt's rounds) on eight values.
struct Network8 {
  const __m512i* keys;
  int rounds;
  __m128i shift;
  __m512i lmask, rmask;

  __attribute__((target("avx512f,avx512dq"))) inline __m512i Encrypt(__m512i y) const {
    __m512i left = _mm512_srl_epi64(y, shift);
    __m512i right = _mm512_and_si512(y, rmask);
    for (int r = 0; r < rounds; r += 2) {
      right = _mm512_xor_si512(right,
                               _mm512_and_si512(Mix64x8(_mm512_xor_si512(left, keys[r])), rmask));
      left = _mm512_xor_si512(left,
                              _mm512_and_si512(Mix64x8(_mm512_xor_si512(right, keys[r + 1])), lmask));
    }
    return _mm512_or_si512(_mm512_sll_epi64(left, shift), right);
  }
};

}  // namespace

// ApplyMany on whole groups of eight values (AVX-512), a block of up to kBlock values at a
// time. One pass of the network over the block writes every value that lands inside
// [0, n); the ~1/4 that land outside (the network permutes [0, 2^bits)) are packed into a
// list, with their places, and the next passes run on that list only, until it is empty:
// ~1.3 passes per value. (Walking eight values until the last of them is inside took ~2.9.)
__attribute__((target("avx512f,avx512dq"))) size_t Permutation::ApplyMany8(uint64_t* xs,
                                                                           size_t n) const {
  const __m512i size = _mm512_set1_epi64(static_cast<long long>(n_));
  __m512i keys[kSmallRounds];
  for (int r = 0; r < rounds_; ++r) {
    keys[r] = _mm512_set1_epi64(static_cast<long long>(round_keys_[r]));
  }
  const Network8 net{keys, rounds_, _mm_cvtsi32_si128(right_bits_),
                     _mm512_set1_epi64(static_cast<long long>(left_mask_)),
                     _mm512_set1_epi64(static_cast<long long>(right_mask_))};
  const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  constexpr size_t kBlock = 256;
  // Values still outside [0, n), and their places in xs. Eight more than a block: the masked
  // loads of a list's last group stay inside the arrays (their masked lanes are not read).
  alignas(64) uint64_t walk[kBlock + 8];
  alignas(64) uint64_t where[kBlock + 8];
  size_t i = 0;
  for (; i + 8 <= n;) {
    const size_t m = std::min(kBlock, (n - i) / 8 * 8);
    size_t walking = 0;
    for (size_t j = i; j < i + m; j += 8) {
      const __m512i x = _mm512_loadu_si512(xs + j);
      const __mmask8 valid = _mm512_cmplt_epu64_mask(x, size);  // as Apply: others unchanged
      const __m512i y = net.Encrypt(x);
      _mm512_storeu_si512(xs + j, _mm512_mask_mov_epi64(x, valid, y));
      const __mmask8 out = _mm512_mask_cmpge_epu64_mask(valid, y, size);
      _mm512_mask_compressstoreu_epi64(walk + walking, out, y);
      _mm512_mask_compressstoreu_epi64(
          where + walking, out, _mm512_add_epi64(iota, _mm512_set1_epi64(static_cast<long long>(j))));
      walking += static_cast<size_t>(__builtin_popcount(out));
    }
    while (walking > 0) {  // the cycle walk of the list, packed in place after each pass
      size_t left = 0;
      for (size_t j = 0; j < walking; j += 8) {
        const __mmask8 live = static_cast<__mmask8>(
            walking - j >= 8 ? 0xFF : (1u << (walking - j)) - 1);
        const __m512i y = net.Encrypt(_mm512_maskz_loadu_epi64(live, walk + j));
        const __m512i at = _mm512_maskz_loadu_epi64(live, where + j);
        const __mmask8 in = _mm512_mask_cmplt_epu64_mask(live, y, size);
        _mm512_mask_i64scatter_epi64(xs, in, at, y, 8);
        const __mmask8 out = static_cast<__mmask8>(live & ~in);
        _mm512_mask_compressstoreu_epi64(walk + left, out, y);  // left <= j: read already
        _mm512_mask_compressstoreu_epi64(where + left, out, at);
        left += static_cast<size_t>(__builtin_popcount(out));
      }
      walking = left;
    }
    i += m;
  }
  return i;
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

void Permutation::ApplyMany(uint64_t* xs, size_t n) const {
  if (rounds_ == 0) {
    for (size_t i = 0; i < n; ++i) xs[i] = Apply(xs[i]);
    return;
  }
  constexpr size_t kLanes = 4;
  size_t i = 0;
#if defined(__x86_64__)
  if (HasAvx512()) i = ApplyMany8(xs, n);
#endif
  for (; i + kLanes <= n; i += kLanes) {
    uint64_t left[kLanes], right[kLanes];
    for (size_t k = 0; k < kLanes; ++k) {
      assert(xs[i + k] < n_);
      left[k] = xs[i + k] >> right_bits_;
      right[k] = xs[i + k] & right_mask_;
    }
    for (int r = 0; r < rounds_; r += 2) {  // Encrypt's rounds, for four values at once
      for (size_t k = 0; k < kLanes; ++k) right[k] ^= Mix64(left[k] ^ round_keys_[r]) & right_mask_;
      for (size_t k = 0; k < kLanes; ++k) {
        left[k] ^= Mix64(right[k] ^ round_keys_[r + 1]) & left_mask_;
      }
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

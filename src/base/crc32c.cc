#include "sluice/base/crc32c.h"

#include <isa-l/crc.h>

#include <array>
#include <climits>

namespace sluice::crc32c {

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  // ISA-L's crc32_iscsi neither pre- nor post-inverts, and takes an int length.
  uint32_t state = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (n > 0) {
    int chunk = n > static_cast<size_t>(INT_MAX / 2) ? INT_MAX / 2 : static_cast<int>(n);
    state = crc32_iscsi(p, chunk, state);
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
  return ~state;
}

namespace {

// Polynomial arithmetic modulo the (bit-reflected) Castagnoli polynomial, as in zlib's
// crc32.c: a CRC register is a polynomial with x^0 in the top bit.
constexpr uint32_t kReflectedPoly = 0x82F63B78u;

constexpr uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t m = uint32_t{1} << 31;
  uint32_t p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kReflectedPoly : b >> 1;
  }
  return p;
}

// kX2n[k] = x^(2^k) mod P, for every k X2nModP can reach (n < 2^64, k starts at 3).
constexpr std::array<uint32_t, 67> MakeX2nTable() {
  std::array<uint32_t, 67> t{};
  uint32_t p = uint32_t{1} << 30;  // x^1
  for (auto& v : t) {
    v = p;
    p = MultModP(p, p);
  }
  return t;
}
constexpr std::array<uint32_t, 67> kX2n = MakeX2nTable();

// x^(n * 2^k) mod P.
uint32_t X2nModP(uint64_t n, unsigned k) {
  uint32_t p = uint32_t{1} << 31;  // x^0
  while (n) {
    if (n & 1) p = MultModP(kX2n[k], p);
    n >>= 1;
    ++k;
  }
  return p;
}

}  // namespace

uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  // Appending len_b bytes multiplies A's register by x^(8 len_b); the pre/post inversions
  // of both CRCs cancel out.
  return MultModP(X2nModP(len_b, 3), crc_a) ^ crc_b;
}

}  // namespace sluice::crc32c

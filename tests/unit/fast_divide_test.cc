#include "sluice/base/fast_divide.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sluice/base/random.h"

namespace sluice {
namespace {

// Each n against the division instruction: the edges of n (0, around multiples of d, the top
// of the range) and random words of every width.
void ExpectExact(uint64_t d) {
  const FastDivider div(d);
  std::vector<uint64_t> ns = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, UINT64_MAX,
                              UINT64_MAX - 1, UINT64_MAX / d * d, UINT64_MAX / d * d - 1,
                              uint64_t{1} << 32, (uint64_t{1} << 32) - 1, uint64_t{1} << 63};
  uint64_t state = d;
  for (int i = 0; i < 2000; ++i) {
    state += 0x9e3779b97f4a7c15ULL;
    const uint64_t r = Mix64(state);
    ns.push_back(r >> (i % 64));  // every width
  }
  for (uint64_t n : ns) {
    ASSERT_EQ(div.Divide(n), n / d) << n << " / " << d;
    ASSERT_EQ(div.Mod(n), n % d) << n << " % " << d;
  }
}

TEST(FastDivider, EqualsTheDivisionInstructionForEveryKindOfDivisor) {
  for (uint64_t d = 1; d <= 4100; ++d) ExpectExact(d);  // lane counts and their neighbours
  for (int b = 1; b < 64; ++b) {                         // around every power of two
    const uint64_t p = uint64_t{1} << b;
    for (uint64_t d : {p - 1, p, p + 1, p + p / 3}) ExpectExact(d);
  }
  for (uint64_t d : {uint64_t{0xFFFFFFFF}, uint64_t{0x100000001}, uint64_t{0x8000000000000001},
                     UINT64_MAX - 1, UINT64_MAX}) {
    ExpectExact(d);
  }
  uint64_t state = 7;
  for (int i = 0; i < 2000; ++i) {  // random divisors of every width
    state += 0x9e3779b97f4a7c15ULL;
    const uint64_t d = Mix64(state) >> (i % 64);
    if (d != 0) ExpectExact(d);
  }
}

}  // namespace
}  // namespace sluice

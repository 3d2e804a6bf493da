#include "sluice/pipeline/permutation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "unit/chi_square.h"

namespace sluice::pipeline {
namespace {

std::vector<uint64_t> Materialize(const Permutation& perm) {
  std::vector<uint64_t> out(perm.size());
  for (uint64_t x = 0; x < perm.size(); ++x) out[x] = perm.Apply(x);
  return out;
}

bool IsPermutationOfRange(std::vector<uint64_t> values) {
  std::sort(values.begin(), values.end());
  for (uint64_t i = 0; i < values.size(); ++i) {
    if (values[i] != i) return false;
  }
  return true;
}

TEST(Permutation, NoValueMissedOrRepeated) {
  // Table (<= 16), small Feistel (<= 2^16) and Feistel sizes, around powers of two.
  for (uint64_t n : {0,  1,  2,   3,   4,   5,    7,    8,     9,     15,    16,    17,    31,
                     32, 33, 255, 256, 257, 1000, 4097, 65535, 65536, 65537, 65539, 200003}) {
    Permutation perm(n, /*key=*/n * 31 + 7);
    std::vector<uint64_t> image = Materialize(perm);
    EXPECT_TRUE(IsPermutationOfRange(image)) << "n=" << n;
    for (uint64_t x = 0; x < n; ++x) ASSERT_EQ(perm.Invert(image[x]), x) << "n=" << n;
  }
}

TEST(Permutation, HugeDomainsDoNotOverflow) {
  // 64-bit domains: the halves are 32 bits and no shift reaches 64 (UBSan checks this).
  for (uint64_t n : {uint64_t{1} << 63, ~uint64_t{0}, (uint64_t{1} << 40) + 1}) {
    Permutation perm(n, 42);
    for (uint64_t x : {uint64_t{0}, uint64_t{1}, n / 2, n - 1}) {
      uint64_t y = perm.Apply(x);
      EXPECT_LT(y, n);
      EXPECT_EQ(perm.Invert(y), x);
    }
  }
}

TEST(Permutation, OutOfRangeInputNeverHangs) {
  // A caller bug must not spin forever in the cycle walk; debug builds assert instead.
#ifdef NDEBUG
  Permutation perm(5, 1);
  EXPECT_EQ(perm.Apply(9), 9u);
  EXPECT_EQ(perm.Invert(9), 9u);
  Permutation feistel(1000, 1);  // ApplyMany's four-at-a-time path, an invalid value among them
  std::vector<uint64_t> xs = {3, 5000, 7, 999, 1000};
  feistel.ApplyMany(xs.data(), xs.size());
  EXPECT_EQ(xs[1], 5000u);
  EXPECT_EQ(xs[4], 1000u);
  EXPECT_EQ(xs[0], feistel.Apply(3));
  // Groups of eight (AVX-512 where the CPU has it): invalid values in both groups of 16.
  std::vector<uint64_t> many(16), want(16);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i % 5 == 1 ? 1000 + i * 7 : i * 61;
  for (size_t i = 0; i < many.size(); ++i) want[i] = feistel.Apply(many[i]);
  feistel.ApplyMany(many.data(), many.size());
  EXPECT_EQ(many, want);
  EXPECT_EQ(many[1], 1007u);
  EXPECT_EQ(many[11], 1077u);
  Permutation empty(0, 1);
  EXPECT_EQ(empty.Apply(0), 0u);
#else
  GTEST_SKIP() << "asserts in debug builds";
#endif
}

TEST(Permutation, KeyChangesTheOrder) {
  std::vector<uint64_t> a = Materialize(Permutation(1000, 1));
  std::vector<uint64_t> b = Materialize(Permutation(1000, 2));
  EXPECT_EQ(a, Materialize(Permutation(1000, 1)));
  EXPECT_NE(a, b);
}

// Over many keys, each of the n! orders of a tiny domain (the Fisher-Yates table) must come up
// about equally often.
void ExpectAllOrdersEquallyLikely(uint64_t n, uint64_t orders, uint64_t keys_per_order) {
  std::map<std::vector<uint64_t>, double> seen;
  const uint64_t keys = orders * keys_per_order;
  for (uint64_t key = 0; key < keys; ++key) seen[Materialize(Permutation(n, key))] += 1;
  ASSERT_EQ(seen.size(), orders) << "n=" << n << ": some orders never occur";
  std::vector<double> observed, expected;
  for (const auto& [order, count] : seen) {
    observed.push_back(count);
    expected.push_back(static_cast<double>(keys_per_order));
  }
  EXPECT_LT(testing::ChiSquare(observed, expected), testing::ChiSquareCritical(orders - 1))
      << "n=" << n;
}

TEST(Permutation, TinyDomainsFavourSomeOrders) {
  ExpectAllOrdersEquallyLikely(2, 2, 2000);
  ExpectAllOrdersEquallyLikely(3, 6, 1000);
  ExpectAllOrdersEquallyLikely(4, 24, 500);
  ExpectAllOrdersEquallyLikely(5, 120, 200);
}

// Over many keys, the images of two fixed points must be uniform over all n(n-1) ordered pairs.
// Small Feistel domains are where too few rounds show: with 8 rounds at n = 32 this statistic
// is about 4 standard deviations too high (docs/order.md), hence kSmallRounds.
double PairStatistic(uint64_t n, uint64_t a, uint64_t b, uint64_t keys_per_pair) {
  std::vector<double> observed(n * n, 0);
  for (uint64_t key = 0; key < n * (n - 1) * keys_per_pair; ++key) {
    Permutation perm(n, key);
    observed[perm.Apply(a) * n + perm.Apply(b)] += 1;
  }
  std::vector<double> seen, expected;
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t j = 0; j < n; ++j) {
      if (i == j) {
        EXPECT_EQ(observed[i * n + j], 0) << "not injective";
        continue;
      }
      seen.push_back(observed[i * n + j]);
      expected.push_back(static_cast<double>(keys_per_pair));
    }
  }
  return testing::ChiSquare(seen, expected);
}

TEST(Permutation, SmallFeistelDomainsFavourSomePairs) {
  for (uint64_t n : {17, 24, 32, 33, 64, 100}) {
    const double critical = testing::ChiSquareCritical(n * (n - 1) - 1.0);
    EXPECT_LT(PairStatistic(n, 0, 1, 100), critical) << "n=" << n << " neighbours";
    EXPECT_LT(PairStatistic(n, 2, n - 1, 100), critical) << "n=" << n << " far apart";
  }
}

// Large domains (8 rounds): sampled statistics, since the domain cannot be enumerated. Images
// of fixed points, preimages of fixed points and the (coarse) joint image of neighbours.
TEST(Permutation, LargeDomainsFavourSomeValues) {
  constexpr uint64_t kKeys = 20000, kBuckets = 20, kPairBuckets = 8;
  for (uint64_t n : {(uint64_t{1} << 20) + 3, uint64_t{10'000'000}}) {
    std::vector<double> images(4 * kBuckets, 0), preimages(4 * kBuckets, 0);
    std::vector<double> pairs(kPairBuckets * kPairBuckets, 0);
    const uint64_t points[] = {0, 1, n / 2, n - 1};
    for (uint64_t key = 0; key < kKeys; ++key) {
      Permutation perm(n, key);
      for (int i = 0; i < 4; ++i) {
        images[i * kBuckets + perm.Apply(points[i]) * kBuckets / n] += 1;
        preimages[i * kBuckets + perm.Invert(points[i]) * kBuckets / n] += 1;
      }
      const uint64_t x = perm.Apply(n / 3), y = perm.Apply(n / 3 + 1);
      pairs[(x * kPairBuckets / n) * kPairBuckets + y * kPairBuckets / n] += 1;
    }
    const std::vector<double> flat(4 * kBuckets, double(kKeys) / kBuckets);
    const double critical = testing::ChiSquareCritical(4 * kBuckets - 1.0);
    EXPECT_LT(testing::ChiSquare(images, flat), critical) << "n=" << n;
    EXPECT_LT(testing::ChiSquare(preimages, flat), critical) << "n=" << n;
    // Neighbours land in the same coarse cell slightly less often than 1/64 (they are distinct),
    // a deviation of ~1/n that no test of this size can see.
    const std::vector<double> flat_pairs(pairs.size(), double(kKeys) / pairs.size());
    EXPECT_LT(testing::ChiSquare(pairs, flat_pairs), testing::ChiSquareCritical(pairs.size() - 1.0))
        << "n=" << n;
  }
}

// Within one large permutation, consecutive images must look unrelated: their gap mod n is
// uniform, tested per key over 100k consecutive points and summed over keys.
TEST(Permutation, LargeDomainNeighboursAreRelated) {
  constexpr uint64_t kKeys = 40, kPoints = 100'000, kBins = 50;
  const uint64_t n = (uint64_t{1} << 22) + 5;
  double statistic = 0;
  for (uint64_t key = 0; key < kKeys; ++key) {
    Permutation perm(n, key);
    std::vector<double> observed(kBins, 0);
    uint64_t previous = perm.Apply(0);
    for (uint64_t p = 1; p <= kPoints; ++p) {
      const uint64_t current = perm.Apply(p);
      observed[(current + n - previous) % n * kBins / n] += 1;
      previous = current;
    }
    // Gaps are uniform on [1, n): bins are equal up to one value in n/kBins, negligible here.
    statistic += testing::ChiSquare(observed, std::vector<double>(kBins, double(kPoints) / kBins));
  }
  EXPECT_LT(statistic, testing::ChiSquareCritical(kKeys * (kBins - 1.0)));
}

TEST(Mix64, KnownValuesAndOrderSensitiveCombine) {
  // Pinned: these functions define every saved order, so they must never change silently.
  EXPECT_EQ(Mix64(0), 0u);
  EXPECT_EQ(Mix64(1), 0x5692161d100b05e5ULL);
  EXPECT_NE(CombineKey(1, 2), CombineKey(2, 1));
  EXPECT_NE(CombineKey(0, 0), 0u);
}

// Pinned like Mix64: a permutation's values define every saved order (a state restores onto
// the same positions only while they hold), in both Feistel regimes (12 rounds up to 2^16, 8
// above) and with cycle walking (200,001 is just above a power-of-two boundary's half).
// ApplyMany is Apply, eight (AVX-512) or four values at a time: in table, small-Feistel and
// large-Feistel domains, for any count (blocks of up to 256 in groups of 8, then the tail,
// four at a time).
TEST(Permutation, ApplyManyEqualsApply) {
  for (uint64_t n : {uint64_t{1}, uint64_t{5}, uint64_t{16}, uint64_t{17}, uint64_t{1000},
                     uint64_t{65537}, uint64_t{1} << 20, (uint64_t{1} << 40) + 3}) {
    const Permutation p(n, 0xfeed + n);
    for (size_t count : {0, 1, 3, 4, 5, 8, 9, 15, 16, 17, 24, 31, 64, 100, 256, 263, 1000}) {
      std::vector<uint64_t> xs;
      for (size_t i = 0; i < count; ++i) xs.push_back(Mix64(i * 31 + n) % n);
      std::vector<uint64_t> want;
      for (uint64_t x : xs) want.push_back(p.Apply(x));
      p.ApplyMany(xs.data(), xs.size());
      EXPECT_EQ(xs, want) << "n " << n << " count " << count;
    }
  }
}

TEST(Permutation, KnownValuesInBothRegimes) {
  struct Case {
    uint64_t n, key;
    std::vector<uint64_t> images;  // of 0, 1, 2, n / 2, n - 1
  };
  const std::vector<Case> cases = {
      {1000, 42, {911, 939, 462, 471, 537}},
      {1 << 20, 7, {454899, 611402, 257354, 622625, 723716}},
      {200001, 0x1234, {167177, 166143, 34142, 185976, 186383}},
  };
  for (const Case& c : cases) {
    const Permutation perm(c.n, c.key);
    const uint64_t xs[] = {0, 1, 2, c.n / 2, c.n - 1};
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(perm.Apply(xs[i]), c.images[i]) << "n " << c.n << " x " << xs[i];
      EXPECT_EQ(perm.Invert(c.images[i]), xs[i]) << "n " << c.n << " y " << c.images[i];
    }
  }
}

}  // namespace
}  // namespace sluice::pipeline

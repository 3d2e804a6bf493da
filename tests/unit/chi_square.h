// Pearson's chi-square goodness-of-fit test for the shuffle-quality tests. The tests use fixed
// seeds, so they are deterministic; the significance level only says how surprising a failure
// would be for a truly uniform shuffle.
#pragma once

#include <cassert>
#include <cmath>
#include <vector>

namespace sluice::testing {

// Sum over bins of (observed - expected)^2 / expected.
inline double ChiSquare(const std::vector<double>& observed, const std::vector<double>& expected) {
  assert(observed.size() == expected.size());
  double stat = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double d = observed[i] - expected[i];
    stat += d * d / expected[i];
  }
  return stat;
}

// The value a chi-square variable with `df` degrees of freedom exceeds with probability ~1e-4
// (z = 3.719), by the Wilson-Hilferty approximation (within 1% of the exact quantile for
// df >= 5, conservative for smaller df).
inline double ChiSquareCritical(double df, double z = 3.719) {
  const double a = 2.0 / (9.0 * df);
  const double c = 1.0 - a + z * std::sqrt(a);
  return df * c * c * c;
}

}  // namespace sluice::testing

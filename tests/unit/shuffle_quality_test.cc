// Is the global shuffle uniform enough? Chi-square tests over a fixed set of seeds (so the
// tests are deterministic) on the statistics a training run cares about: where a given record
// lands, which record lands at a given position, how far records move, and whether neighbours
// in the order are related. Each test also runs a tf.data-style shuffle buffer of 10 through
// the same statistic and requires it to FAIL, which shows the statistic can catch a weak
// shuffle.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "sluice/pipeline/global_order.h"
#include "unit/chi_square.h"

namespace sluice::pipeline {
namespace {

constexpr uint64_t kRecords = 1000;
constexpr uint64_t kOrders = 2000;  // seeds 0..1999 (or epochs 0..1999)

using OrderFn = std::function<std::vector<uint64_t>(uint64_t seed)>;

std::vector<uint64_t> GlobalShuffle(uint64_t seed) {
  // Uneven shards, so that shard boundaries would show if they leaked into the order.
  GlobalOrder order({300, 0, 123, 77, 500}, OrderOptions{ShuffleMode::kGlobal, seed}, 0);
  std::vector<uint64_t> out(order.size());
  for (uint64_t p = 0; p < order.size(); ++p) out[p] = order.RecordAt(p);
  return out;
}

std::vector<uint64_t> GlobalShuffleByEpoch(uint64_t epoch) {
  GlobalOrder order({kRecords}, OrderOptions{ShuffleMode::kGlobal, 2024}, epoch);
  std::vector<uint64_t> out(order.size());
  for (uint64_t p = 0; p < order.size(); ++p) out[p] = order.RecordAt(p);
  return out;
}

// tf.data's shuffle(buffer_size=10) over records in shard order: fill the buffer, then emit a
// random element and refill its slot from the input; drain at the end.
std::vector<uint64_t> BufferShuffle10(uint64_t seed) {
  constexpr uint64_t kBuffer = 10;
  std::vector<uint64_t> buffer, out;
  uint64_t rng = seed;
  auto pick = [&](uint64_t bound) { return Mix64(rng += 0x9e3779b97f4a7c15ULL) % bound; };
  for (uint64_t next = 0; next < kRecords || !buffer.empty();) {
    while (buffer.size() < kBuffer && next < kRecords) buffer.push_back(next++);
    const uint64_t i = pick(buffer.size());
    out.push_back(buffer[i]);
    buffer[i] = buffer.back();
    buffer.pop_back();
  }
  return out;
}

// A sum of chi-square statistics and of their degrees of freedom: itself chi-square
// distributed when the parts are independent.
struct Verdict {
  double statistic = 0;
  double df = 0;
  void Add(const std::vector<double>& observed, const std::vector<double>& expected) {
    statistic += testing::ChiSquare(observed, expected);
    df += static_cast<double>(observed.size()) - 1;
  }
  double Critical() const { return testing::ChiSquareCritical(df); }
};

// Positions of records 0, N/2 and N-1 over all orders, each in 20 equal buckets.
Verdict PositionOfFixedRecords(const OrderFn& order_fn) {
  constexpr uint64_t kBuckets = 20;
  const uint64_t records[] = {0, kRecords / 2, kRecords - 1};
  std::vector<std::vector<double>> observed(3, std::vector<double>(kBuckets, 0));
  for (uint64_t seed = 0; seed < kOrders; ++seed) {
    const std::vector<uint64_t> order = order_fn(seed);
    for (uint64_t p = 0; p < order.size(); ++p) {
      for (int r = 0; r < 3; ++r) {
        if (order[p] == records[r]) observed[r][p * kBuckets / kRecords] += 1;
      }
    }
  }
  Verdict verdict;
  for (const std::vector<double>& o : observed) {
    verdict.Add(o, std::vector<double>(kBuckets, double(kOrders) / kBuckets));
  }
  return verdict;
}

// The records at positions 0, N/2 and N-1 over all orders, each in 20 equal buckets of ids.
Verdict RecordAtFixedPositions(const OrderFn& order_fn) {
  constexpr uint64_t kBuckets = 20;
  const uint64_t positions[] = {0, kRecords / 2, kRecords - 1};
  std::vector<std::vector<double>> observed(3, std::vector<double>(kBuckets, 0));
  for (uint64_t seed = 0; seed < kOrders; ++seed) {
    const std::vector<uint64_t> order = order_fn(seed);
    for (int i = 0; i < 3; ++i) observed[i][order[positions[i]] * kBuckets / kRecords] += 1;
  }
  Verdict verdict;
  for (const std::vector<double>& o : observed) {
    verdict.Add(o, std::vector<double>(kBuckets, double(kOrders) / kBuckets));
  }
  return verdict;
}

// A statistic of every position of an order, in `bins` bins with the given probabilities,
// tested twice: pooled over all orders (catches a small bias shared by all seeds) and within
// each order, summed (catches structure inside one epoch that differs from seed to seed).
using PositionBin = std::function<uint64_t(const std::vector<uint64_t>& order, uint64_t p)>;
Verdict PooledAndPerOrder(const OrderFn& order_fn, uint64_t positions,
                          const std::vector<double>& probabilities, const PositionBin& bin) {
  const size_t bins = probabilities.size();
  std::vector<double> per_order_expected(bins), pooled_expected(bins), pooled(bins, 0);
  for (size_t b = 0; b < bins; ++b) {
    per_order_expected[b] = probabilities[b] * double(positions);
    pooled_expected[b] = per_order_expected[b] * kOrders;
  }
  Verdict verdict;
  for (uint64_t seed = 0; seed < kOrders; ++seed) {
    const std::vector<uint64_t> order = order_fn(seed);
    std::vector<double> observed(bins, 0);
    for (uint64_t p = 0; p < positions; ++p) observed[bin(order, p)] += 1;
    verdict.Add(observed, per_order_expected);
    for (size_t b = 0; b < bins; ++b) pooled[b] += observed[b];
  }
  verdict.Add(pooled, pooled_expected);
  return verdict;
}

// |position - record| in 10 bins of width N/10. For a uniform permutation P(d = 0) = 1/N and
// P(d) = 2 (N - d) / N^2 for d > 0.
Verdict Displacement(const OrderFn& order_fn) {
  constexpr uint64_t kBins = 10;
  const double n = kRecords;
  std::vector<double> probabilities(kBins, 0);
  for (uint64_t d = 0; d < kRecords; ++d) {
    probabilities[d * kBins / kRecords] += d == 0 ? 1 / n : 2 * (n - d) / (n * n);
  }
  return PooledAndPerOrder(order_fn, kRecords, probabilities,
                           [](const std::vector<uint64_t>& order, uint64_t p) {
                             const uint64_t d = p > order[p] ? p - order[p] : order[p] - p;
                             return d * kBins / kRecords;
                           });
}

// (record at p+1 - record at p) mod N: uniform on [1, N) if neighbours in the order are
// unrelated. 10 bins over [1, N).
Verdict NeighbourGap(const OrderFn& order_fn) {
  constexpr uint64_t kBins = 10;
  auto bin_of_gap = [](uint64_t gap) { return (gap - 1) * kBins / (kRecords - 1); };
  std::vector<double> probabilities(kBins, 0);
  for (uint64_t gap = 1; gap < kRecords; ++gap)
    probabilities[bin_of_gap(gap)] += 1.0 / (kRecords - 1);
  return PooledAndPerOrder(order_fn, kRecords - 1, probabilities,
                           [&](const std::vector<uint64_t>& order, uint64_t p) {
                             return bin_of_gap((order[p + 1] + kRecords - order[p]) % kRecords);
                           });
}

void ExpectUniformButBufferIsNot(const std::function<Verdict(const OrderFn&)>& statistic) {
  for (const OrderFn& shuffle : {OrderFn(GlobalShuffle), OrderFn(GlobalShuffleByEpoch)}) {
    Verdict good = statistic(shuffle);
    EXPECT_LT(good.statistic, good.Critical()) << "global shuffle is not uniform";
  }
  Verdict weak = statistic(BufferShuffle10);
  EXPECT_GT(weak.statistic, weak.Critical()) << "the test cannot tell a weak shuffle";
}

TEST(ShuffleQuality, RecordsFavourSomePositions) {
  ExpectUniformButBufferIsNot(PositionOfFixedRecords);
}

TEST(ShuffleQuality, PositionsFavourSomeRecords) {
  ExpectUniformButBufferIsNot(RecordAtFixedPositions);
}

TEST(ShuffleQuality, RecordsMoveTooLittle) { ExpectUniformButBufferIsNot(Displacement); }

TEST(ShuffleQuality, NeighboursAreRelated) { ExpectUniformButBufferIsNot(NeighbourGap); }

}  // namespace
}  // namespace sluice::pipeline

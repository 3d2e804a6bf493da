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

struct Histogram {
  std::vector<double> observed;
  std::vector<double> expected;
  double Statistic() const { return testing::ChiSquare(observed, expected); }
  double Critical() const { return testing::ChiSquareCritical(observed.size() - 1.0); }
};

// Positions of records 0, N/2 and N-1, each in 20 equal buckets: 60 bins.
Histogram PositionOfFixedRecords(const OrderFn& order_fn) {
  constexpr uint64_t kBuckets = 20;
  const uint64_t records[] = {0, kRecords / 2, kRecords - 1};
  Histogram h{std::vector<double>(3 * kBuckets, 0),
              std::vector<double>(3 * kBuckets, double(kOrders) / kBuckets)};
  for (uint64_t seed = 0; seed < kOrders; ++seed) {
    const std::vector<uint64_t> order = order_fn(seed);
    for (uint64_t p = 0; p < order.size(); ++p) {
      for (int r = 0; r < 3; ++r) {
        if (order[p] == records[r]) h.observed[r * kBuckets + p * kBuckets / kRecords] += 1;
      }
    }
  }
  return h;
}

// The record at positions 0, N/2 and N-1, each in 20 equal buckets of ids.
Histogram RecordAtFixedPositions(const OrderFn& order_fn) {
  constexpr uint64_t kBuckets = 20;
  const uint64_t positions[] = {0, kRecords / 2, kRecords - 1};
  Histogram h{std::vector<double>(3 * kBuckets, 0),
              std::vector<double>(3 * kBuckets, double(kOrders) / kBuckets)};
  for (uint64_t seed = 0; seed < kOrders; ++seed) {
    const std::vector<uint64_t> order = order_fn(seed);
    for (int i = 0; i < 3; ++i) {
      h.observed[i * kBuckets + order[positions[i]] * kBuckets / kRecords] += 1;
    }
  }
  return h;
}

// |position - record| over all records, in 10 bins of width N/10. For a uniform permutation
// P(d = 0) = 1/N and P(d) = 2 (N - d) / N^2 for d > 0.
Histogram Displacement(const OrderFn& order_fn) {
  constexpr uint64_t kBins = 10;
  Histogram h{std::vector<double>(kBins, 0), std::vector<double>(kBins, 0)};
  const double n = kRecords;
  for (uint64_t d = 0; d < kRecords; ++d) {
    const double p = d == 0 ? 1 / n : 2 * (n - d) / (n * n);
    h.expected[d * kBins / kRecords] += p * n * kOrders;
  }
  for (uint64_t seed = 0; seed < kOrders; ++seed) {
    const std::vector<uint64_t> order = order_fn(seed);
    for (uint64_t p = 0; p < order.size(); ++p) {
      const uint64_t d = p > order[p] ? p - order[p] : order[p] - p;
      h.observed[d * kBins / kRecords] += 1;
    }
  }
  return h;
}

// (record at p+1 - record at p) mod N over all p: uniform on [1, N) if neighbours in the order
// are unrelated. 10 bins over [1, N).
Histogram NeighbourGap(const OrderFn& order_fn) {
  constexpr uint64_t kBins = 10;
  Histogram h{std::vector<double>(kBins, 0), std::vector<double>(kBins, 0)};
  auto bin = [](uint64_t gap) { return (gap - 1) * kBins / (kRecords - 1); };
  for (uint64_t gap = 1; gap < kRecords; ++gap) {
    h.expected[bin(gap)] += double(kOrders);  // (N - 1) gaps per order, each 1 / (N - 1)
  }
  for (uint64_t seed = 0; seed < kOrders; ++seed) {
    const std::vector<uint64_t> order = order_fn(seed);
    for (uint64_t p = 0; p + 1 < order.size(); ++p) {
      h.observed[bin((order[p + 1] + kRecords - order[p]) % kRecords)] += 1;
    }
  }
  return h;
}

void ExpectUniformButBufferIsNot(const std::function<Histogram(const OrderFn&)>& statistic) {
  for (const OrderFn& shuffle : {OrderFn(GlobalShuffle), OrderFn(GlobalShuffleByEpoch)}) {
    Histogram good = statistic(shuffle);
    EXPECT_LT(good.Statistic(), good.Critical()) << "global shuffle is not uniform";
  }
  Histogram weak = statistic(BufferShuffle10);
  EXPECT_GT(weak.Statistic(), weak.Critical()) << "the test cannot tell a weak shuffle";
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

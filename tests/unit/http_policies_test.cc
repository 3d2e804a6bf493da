// RetryPolicy and HedgePolicy: pure decisions, tested with made-up failures and latencies.
#include <gtest/gtest.h>

#include <random>

#include "sluice/io/hedge_policy.h"
#include "sluice/io/http_engine.h"
#include "sluice/io/retry_policy.h"

namespace sluice::io {
namespace {

using namespace std::chrono_literals;

AttemptFailure Status(long code, std::string error_code = "") {
  AttemptFailure f;
  f.kind = AttemptFailure::Kind::kStatus;
  f.http_status = code;
  f.error_code = std::move(error_code);
  return f;
}

AttemptFailure Transport(AttemptFailure::Kind kind) {
  AttemptFailure f;
  f.kind = kind;
  return f;
}

TEST(RetryPolicy, RetriesServerErrorsThrottlingAndBrokenTransfers) {
  RetryPolicy p;
  for (long s : {408L, 429L, 500L, 502L, 503L, 504L}) EXPECT_TRUE(p.IsRetryable(Status(s))) << s;
  for (long s : {400L, 401L, 403L, 404L, 409L, 412L, 416L})
    EXPECT_FALSE(p.IsRetryable(Status(s))) << s;
  using Kind = AttemptFailure::Kind;
  for (Kind k : {Kind::kConnect, Kind::kReset, Kind::kStall, Kind::kShortBody}) {
    EXPECT_TRUE(p.IsRetryable(Transport(k)));
  }
  EXPECT_FALSE(p.IsRetryable(Transport(Kind::kUnavailable)));
}

TEST(RetryPolicy, ErrorCodesMakeOtherStatusesRetryable) {
  RetryPolicy p;
  EXPECT_TRUE(p.IsRetryable(Status(400, "RequestTimeout")));
  EXPECT_TRUE(p.IsRetryable(Status(200, "InternalError")));
  EXPECT_FALSE(p.IsRetryable(Status(403, "SignatureDoesNotMatch")));
}

TEST(RetryPolicy, StopsAfterMaxAttempts) {
  RetryPolicy::Options o;
  o.max_attempts = 3;
  RetryPolicy p(o);
  EXPECT_TRUE(p.ShouldRetry(Status(503), 1));
  EXPECT_TRUE(p.ShouldRetry(Status(503), 2));
  EXPECT_FALSE(p.ShouldRetry(Status(503), 3));
}

TEST(RetryPolicy, BackoffGrowsExponentiallyWithinJitterAndCap) {
  RetryPolicy::Options o;
  o.base_delay = 100ms;
  o.max_delay = 1000ms;
  RetryPolicy p(o);
  std::mt19937_64 rng(7);
  for (int attempt = 1; attempt <= 8; ++attempt) {
    const int64_t step = std::min<int64_t>(1000, 100LL << (attempt - 1));
    int64_t lo = step, hi = 0;
    for (int i = 0; i < 2000; ++i) {
      const int64_t d = p.Delay(attempt, rng()).count();
      ASSERT_GE(d, step / 2) << attempt;
      ASSERT_LE(d, step) << attempt;
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
    EXPECT_LT(lo, step / 2 + step / 10) << "jitter reaches the low end, attempt " << attempt;
    EXPECT_GT(hi, step - step / 10) << "jitter reaches the high end, attempt " << attempt;
  }
}

TEST(RetryPolicy, DecoderSuppliesErrorCodes) {
  RetryPolicy::Options o;
  o.decode_error_code = [](long status, std::string_view body) {
    return status == 503 ? std::string(body) : std::string();
  };
  RetryPolicy p(o);
  EXPECT_EQ(p.ErrorCode(503, "SlowDown"), "SlowDown");
  EXPECT_EQ(p.ErrorCode(404, "x"), "");
  EXPECT_EQ(RetryPolicy().ErrorCode(503, "SlowDown"), "");
}

TEST(HedgePolicy, NoHedgingBeforeEnoughSamples) {
  HedgePolicy::Options o;
  o.min_samples = 10;
  o.early_samples = 10;  // no early delay
  HedgePolicy h(o);
  for (int i = 0; i < 9; ++i) h.RecordFirstByte(10ms);
  EXPECT_FALSE(h.Delay().has_value());
  h.RecordFirstByte(10ms);
  ASSERT_TRUE(h.Delay().has_value());
  EXPECT_EQ(*h.Delay(), 10ms);
}

TEST(HedgePolicy, FirstRequestsGetACautiousDelayOfAMultipleOfTheirMedian) {
  HedgePolicy::Options o;  // early from 8 samples, 2x the median; p95 from 40
  o.min_delay = 0us;
  HedgePolicy h(o);
  for (int i = 0; i < 7; ++i) h.RecordFirstByte(std::chrono::milliseconds(10 + i));
  EXPECT_FALSE(h.Delay().has_value()) << "7 samples say nothing";
  h.RecordFirstByte(500ms);  // a stall among the first requests does not move the median
  ASSERT_TRUE(h.Delay().has_value());
  EXPECT_EQ(*h.Delay(), 2 * 13ms);  // median of 10..16 ms and 500 ms: 13 ms
  for (int i = 8; i < 40; ++i) h.RecordFirstByte(10ms);
  EXPECT_EQ(*h.Delay(), 15ms) << "from min_samples on: the running p95";
}

TEST(HedgePolicy, DelayIsTheRunningP95) {
  HedgePolicy::Options o;
  o.min_samples = 10;
  o.min_delay = 0us;
  HedgePolicy h(o);
  for (int i = 1; i <= 100; ++i) h.RecordFirstByte(std::chrono::milliseconds(i));
  ASSERT_TRUE(h.Delay().has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(*h.Delay()).count(), 95);
  EXPECT_DOUBLE_EQ(h.Quantile(0.5), 50000);
}

TEST(HedgePolicy, DelayFollowsLatencyShiftsWithinTheWindow) {
  HedgePolicy::Options o;
  o.min_samples = 10;
  o.window = 100;
  o.min_delay = 0us;
  HedgePolicy h(o);
  for (int i = 0; i < 100; ++i) h.RecordFirstByte(5ms);
  EXPECT_EQ(*h.Delay(), 5ms);
  for (int i = 0; i < 100; ++i) h.RecordFirstByte(50ms);  // the old samples age out
  EXPECT_EQ(*h.Delay(), 50ms);
}

TEST(HedgePolicy, LatenciesAreKeptPerSizeClass) {
  EXPECT_EQ(HedgePolicy::SizeClass(std::nullopt), 0u);
  EXPECT_EQ(HedgePolicy::SizeClass(12), 0u);
  EXPECT_EQ(HedgePolicy::SizeClass(64 << 10), 0u);
  EXPECT_EQ(HedgePolicy::SizeClass(1 << 20), 1u);
  EXPECT_EQ(HedgePolicy::SizeClass(8 << 20), 2u);
  HedgePolicy::Options o;
  o.min_delay = 0us;
  HedgePolicy h(o);
  for (int i = 0; i < 100; ++i) h.RecordFirstByte(1ms, 0);  // header reads: fast
  EXPECT_EQ(*h.Delay(0), 1ms);
  EXPECT_FALSE(h.Delay(2).has_value()) << "no whole-shard GET measured yet: none hedged";
  for (int i = 0; i < 40; ++i) h.RecordFirstByte(30ms, 2);
  EXPECT_EQ(*h.Delay(2), 30ms) << "large ranges against large ranges";
  EXPECT_EQ(*h.Delay(0), 1ms);
  EXPECT_EQ(h.BusiestClass(), 0u);
  EXPECT_EQ(h.Quantile(0.5, 2), 30000.0);
}

TEST(HedgePolicy, NeverSoonerThanTheMinimumDelay) {
  HedgePolicy::Options o;
  o.min_samples = 1;
  o.min_delay = 3ms;
  HedgePolicy h(o);
  h.RecordFirstByte(100us);
  EXPECT_EQ(*h.Delay(), 3ms);
}

TEST(HedgePolicy, BudgetCapsDuplicatesAtTheConfiguredShare) {
  HedgePolicy h;  // 5%, burst 10
  int hedges = 0;
  for (int i = 0; i < 10000; ++i) {
    h.OnRequest();
    if (h.TryHedge()) ++hedges;  // every request wants a duplicate: the budget decides
  }
  EXPECT_LE(hedges, 500 + 10);  // 5% of the requests and the burst the budget starts with
  EXPECT_GE(hedges, 509);
}

TEST(HedgePolicy, BudgetStartsWithAFullBurst) {
  HedgePolicy h;  // burst 10: the first stalls of a job are hedged before any request earned
  int hedges = 0;
  while (h.TryHedge()) ++hedges;
  EXPECT_EQ(hedges, 10);
  HedgePolicy::Options o;
  o.burst = 0;
  HedgePolicy none(o);
  EXPECT_FALSE(none.TryHedge());
}

TEST(HedgePolicy, BudgetSavesOnlyABurst) {
  HedgePolicy h;  // burst 10
  for (int i = 0; i < 10000; ++i) h.OnRequest();  // a long quiet spell
  int hedges = 0;
  while (h.TryHedge()) ++hedges;
  EXPECT_EQ(hedges, 10);
}

TEST(HedgePolicy, OverdueRequestsBorrowUpToTheDebtLimit) {
  HedgePolicy h;  // 5%, burst 10, borrows up to 10 when overdue
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(h.TryHedge());  // the burst it starts with
  EXPECT_FALSE(h.TryHedge());  // spent, nothing earned yet
  int borrowed = 0;
  while (h.TryHedge(/*overdue=*/true)) ++borrowed;
  EXPECT_EQ(borrowed, 10);
  EXPECT_FALSE(h.TryHedge(/*overdue=*/true));
  // The debt is paid back by the requests to come before a plain hedge finds a token:
  // 11 duplicates of 0.05 each = 220 requests.
  for (int i = 0; i < 219; ++i) h.OnRequest();
  EXPECT_FALSE(h.TryHedge());
  EXPECT_TRUE(h.TryHedge(/*overdue=*/true));  // owes 9.05 < 10 before: may borrow one more
  for (int i = 0; i < 21; ++i) h.OnRequest();
  EXPECT_TRUE(h.TryHedge());
}

TEST(HedgePolicy, BorrowingKeepsDuplicatesUnderTheShareOverARun) {
  HedgePolicy h;
  int hedges = 0;
  for (int i = 0; i < 10000; ++i) {
    h.OnRequest();
    if (h.TryHedge() || h.TryHedge(/*overdue=*/true)) ++hedges;  // every request overdue
  }
  EXPECT_LE(hedges, 500 + 10 + 10);  // share + burst (it starts full) + debt
  EXPECT_GE(hedges, 500);
}

TEST(HedgePolicy, NoBorrowingWithoutAnOverdueMultipleOrDebt) {
  for (auto [multiple, debt] : {std::pair{0.0, 10.0}, std::pair{2.0, 0.0}}) {
    HedgePolicy::Options o;
    o.overdue_multiple = multiple;
    o.max_debt = debt;
    o.burst = 0;  // nothing saved: only borrowing could hedge
    HedgePolicy h(o);
    EXPECT_EQ(h.overdue_multiple(), 0.0);
    EXPECT_FALSE(h.TryHedge(/*overdue=*/true));
  }
}

TEST(HedgePolicy, DisabledNeverHedges) {
  HedgePolicy::Options o;
  o.enabled = false;
  o.min_samples = 1;
  HedgePolicy h(o);
  for (int i = 0; i < 1000; ++i) {
    h.OnRequest();
    h.RecordFirstByte(1ms);
  }
  EXPECT_FALSE(h.Delay().has_value());
  EXPECT_FALSE(h.TryHedge());
}

TEST(HttpStats, SinceSubtractsCountersAndKeepsGauges) {
  HttpEngineStats before, now;
  before.requests = 10;
  before.bytes_received = 1000;
  before.hedges = 1;
  now.requests = 25;
  now.bytes_received = 3001000;
  now.hedges = 3;
  now.hedges_won = 2;
  now.in_flight = 7;
  HttpEngineStats d = Since(now, before);
  EXPECT_EQ(d.requests, 15u);
  EXPECT_EQ(d.bytes_received, 3000000u);
  EXPECT_EQ(d.hedges, 2u);
  EXPECT_EQ(d.in_flight, 7u);
  const std::string line = DescribeHttpStats(d, 2.0);
  EXPECT_NE(line.find("7 requests in flight"), std::string::npos) << line;
  EXPECT_NE(line.find("1.5 MB/s in"), std::string::npos) << line;
  EXPECT_NE(line.find("2 hedges (2 won)"), std::string::npos) << line;
  EXPECT_EQ(DescribeHttpStats(HttpEngineStats(), 1.0), "");
}

}  // namespace
}  // namespace sluice::io

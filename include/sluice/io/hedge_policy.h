// Hedged requests ("The Tail at Scale", Dean & Barroso 2013): a read whose first byte has not
// arrived by the running p95 of recent first-byte latencies is sent a second time; the first
// to answer wins and the other is cancelled. A token budget keeps the duplicates under a
// fixed share of the reads (a request that finds it empty waits for the next token, oldest
// first: the engine's queue), except a request still waiting at a multiple of the delay: it
// borrows from the tokens of the requests to come (bounded). Latencies are kept per size
// class of the response (SizeClass): a server may answer a large range later than a small
// one (Ceph RGW reads up to 4 MiB from its store before the first byte), and a whole-shard
// GET measured against the header reads' latencies was duplicated in full every time.
// Pure and single-threaded (the HTTP engine's thread owns it), so tests drive it with
// made-up latencies.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace sluice::io {

class HedgePolicy {
 public:
  struct Options {
    bool enabled = true;  // Default: true
    // Hedge when the first byte is later than this quantile of recent first-byte latencies.
    double quantile = 0.95;  // Default: p95
    // Duplicates never exceed this share of hedgeable requests (plus `burst`).
    double max_extra_fraction = 0.05;  // Default: 5%
    // Duplicates that may be saved up: slow first bytes come in clusters (a server stall
    // delays every request in flight), so a small budget leaves most of a cluster's wanted
    // hedges unsent. The budget starts full, as gRPC's retry throttle does: a stall among the
    // first requests is hedged like any other. Default: 10.
    double burst = 10;
    // The running quantile from this many latencies on (a p95 of ten samples is noise).
    size_t min_samples = 40;  // Default: 40
    // Before that, from early_samples latencies on, a cautious delay: early_multiple x their
    // median (a stall among a job's first requests is hedged too). No hedging before. A
    // larger multiple lets one stalled early read alone set a run's p99.9. Default: 2.
    size_t early_samples = 8;     // Default: 8
    double early_multiple = 2.0;  // Default: 2
    size_t window = 1000;     // Default: the latest 1000 first-byte latencies
    // A request still without a first byte at this multiple of the delay is hedged even on an
    // empty budget, borrowing up to `max_debt` duplicates from the requests to come. Without
    // it a stall could wait for its whole length: hedges at the p95 spend the budget about as
    // fast as it is earned (5% of first bytes are later than the p95), and with one request in
    // flight the stall itself stops the requests that earn tokens. The multiple must leave a
    // borrowed hedge time to answer within ~3x the median (a hedged read ends at the delay
    // plus one more read). 0: never borrow. Default: 1.5.
    double overdue_multiple = 1.5;
    // Duplicates that may be borrowed at most; over a run duplicates stay under
    // max_extra_fraction x requests + burst + max_debt. Default: 10.
    double max_debt = 10;
    // Never hedge sooner than this (a p95 of 1 ms on loopback would duplicate on scheduling
    // noise). Default: 2 ms.
    std::chrono::microseconds min_delay{2000};
  };

  HedgePolicy() : HedgePolicy(Options()) {}
  explicit HedgePolicy(Options options);

  // Size classes of responses: below 256 KiB (or unknown), below 2 MiB, larger.
  static constexpr size_t kSizeClasses = 3;
  static size_t SizeClass(std::optional<uint64_t> response_bytes);

  // A hedgeable request started: earns max_extra_fraction of a duplicate.
  void OnRequest();
  // The time from sending a request of size class `size_class` to its first response byte.
  void RecordFirstByte(std::chrono::microseconds latency, size_t size_class = 0);
  // How long a request of the class waits for a first byte before duplicating; nullopt while
  // disabled or before early_samples latencies of its class.
  std::optional<std::chrono::microseconds> Delay(size_t size_class = 0);
  // Spends one duplicate from the budget; false when the budget is empty, unless `overdue`
  // (the request has waited overdue_multiple x its delay) and less than max_debt is owed.
  bool TryHedge(bool overdue = false);
  // The multiple of the delay from which a waiting request may borrow (0: never).
  double overdue_multiple() const { return options_.max_debt >= 1 ? options_.overdue_multiple : 0; }
  // A quantile (0..1) of the recent latencies of a class, in microseconds; 0 without samples.
  double Quantile(double q, size_t size_class = 0) const;
  // The class with the most latencies recorded (what stats report).
  size_t BusiestClass() const;

 private:
  struct Latencies {
    std::vector<int64_t> samples;  // ring buffer of first-byte latencies (us)
    size_t next = 0;               // where the next sample goes once the ring is full
    uint64_t recorded = 0;         // samples ever recorded
    uint64_t delay_at = 0;         // recorded when delay_us was computed
    int64_t delay_us = 0;
  };
  Options options_;
  std::array<Latencies, kSizeClasses> classes_;
  double tokens_;  // starts at burst; negative while borrowed duplicates are owed
};

}  // namespace sluice::io

// The clock a distributed job's scheduler reads. The scheduler never reads the system clock
// itself, so its decisions (locality wait, speculation) are tested on a FakeClock with
// scripted worker events, and the 1,000-rank simulation runs in simulated seconds.
#pragma once

namespace sluice::dist {

// Seconds since an arbitrary origin, never decreasing.
// Threading: Now() may be called from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double Now() const = 0;
};

// std::chrono::steady_clock. Process-wide, never destroyed.
const Clock* SteadyClock();

// A clock that moves only when told (tests, simulation).
// Threading: not thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(double start = 0) : now_(start) {}
  double Now() const override { return now_; }
  void Advance(double seconds) { now_ += seconds; }
  void Set(double now) { now_ = now; }

 private:
  double now_;
};

}  // namespace sluice::dist

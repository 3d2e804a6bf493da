// Keeps the thread that consumes a pipeline responsive while Iterator::Next waits for data:
// this is how Python's Ctrl-C stops a blocked `next(it)` (docs/python.md, "Ctrl-C").
//
// While a ScopedWaitCheck lives on a thread, every wait of that thread inside the pipeline
// wakes at least every `interval` and calls `check`. A non-OK status ends the wait and Next
// returns it; the iterator then stays failed, as after any error, but Save() still returns
// the state after the last delivered element, so a fresh iterator can continue from there.
// Waits on pool threads are never affected (the check is thread-local).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "sluice/base/status.h"

namespace sluice::pipeline {

class ScopedWaitCheck {
 public:
  // A plain function pointer (no allocation per Next call); `arg` is passed through.
  using CheckFn = Status (*)(void* arg);

  ScopedWaitCheck(CheckFn check, void* arg,
                  std::chrono::milliseconds interval = std::chrono::milliseconds(50));
  ~ScopedWaitCheck();  // reinstates the check that was current before
  ScopedWaitCheck(const ScopedWaitCheck&) = delete;
  ScopedWaitCheck& operator=(const ScopedWaitCheck&) = delete;

  // The calling thread's innermost check, or null.
  static ScopedWaitCheck* Current();

  // Runs the check if its interval has passed since it last ran (or since construction).
  // Once the check failed, returns that failure without running it again.
  Status MaybeRun();
  // The check's failure, OK while it has not failed. Iterator::Next returns it rather than
  // an element, so an interrupted Next never delivers one.
  const Status& failure() const { return failure_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

 private:
  CheckFn check_;
  void* arg_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point deadline_;
  ScopedWaitCheck* previous_;
  Status failure_;
};

// The calling thread's check (MaybeRun), or OK on a thread without one: what work loops on
// the consumer's thread poll between elements.
Status CheckWaitInterrupt();

// cv.wait(lock), except that on a thread with a ScopedWaitCheck it wakes by the check's
// deadline and runs it; returns the check's error (lock held again either way). Like
// cv.wait it may return spuriously: callers re-test their condition in a loop.
Status WaitWithCheck(std::condition_variable& cv, std::unique_lock<std::mutex>& lock);

}  // namespace sluice::pipeline

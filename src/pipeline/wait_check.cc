#include "sluice/pipeline/wait_check.h"

namespace sluice::pipeline {
namespace {
thread_local ScopedWaitCheck* current_check = nullptr;
}  // namespace

ScopedWaitCheck::ScopedWaitCheck(CheckFn check, void* arg, std::chrono::milliseconds interval)
    : check_(check),
      arg_(arg),
      interval_(interval),
      deadline_(std::chrono::steady_clock::now() + interval),
      previous_(current_check) {
  current_check = this;
}

ScopedWaitCheck::~ScopedWaitCheck() { current_check = previous_; }

ScopedWaitCheck* ScopedWaitCheck::Current() { return current_check; }

Status ScopedWaitCheck::MaybeRun() {
  if (!failure_.ok()) return failure_;
  auto now = std::chrono::steady_clock::now();
  if (now < deadline_) return Status::OK();
  deadline_ = now + interval_;
  failure_ = check_(arg_);
  return failure_;
}

Status CheckWaitInterrupt() {
  ScopedWaitCheck* check = current_check;
  return check == nullptr ? Status::OK() : check->MaybeRun();
}

Status WaitWithCheck(std::condition_variable& cv, std::unique_lock<std::mutex>& lock) {
  ScopedWaitCheck* check = ScopedWaitCheck::Current();
  if (check == nullptr) {
    cv.wait(lock);
    return Status::OK();
  }
  if (cv.wait_until(lock, check->deadline()) == std::cv_status::no_timeout) return Status::OK();
  // The check may take locks of its own (Python's GIL): never run it under a pipeline mutex.
  lock.unlock();
  Status s = check->MaybeRun();
  lock.lock();
  return s;
}

}  // namespace sluice::pipeline

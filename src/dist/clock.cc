#include "sluice/dist/clock.h"

#include <chrono>

namespace sluice::dist {

namespace {
class Steady final : public Clock {
 public:
  double Now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};
}  // namespace

const Clock* SteadyClock() {
  static const Steady clock;
  return &clock;
}

}  // namespace sluice::dist

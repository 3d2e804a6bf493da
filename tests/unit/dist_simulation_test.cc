// The scheduler against simulated ranks: deterministic per seed, never loses or repeats a
// task, and speculation and the locality wait do what they are for (simulated seconds).
#include <gtest/gtest.h>

#include "sluice/dist/simulation.h"

namespace sluice::dist {
namespace {

SimulationOptions Small() {
  SimulationOptions o;
  o.ranks = 40;
  o.ranks_per_node = 4;
  o.tasks = 400;
  o.slow_rank_fraction = 0.05;
  return o;
}

TEST(DistSimulation, SameSeedSameJob) {
  auto a = Simulate(Small());
  auto b = Simulate(Small());
  EXPECT_EQ(a.job_seconds, b.job_seconds);
  EXPECT_EQ(a.progress.committed, 400u);
  EXPECT_EQ(a.progress.queued, 0u);  // losing copies may still run: the job is done
  EXPECT_EQ(a.progress.running, b.progress.running);
}

TEST(DistSimulation, SpeculationShortensAJobWithSlowRanks) {
  SimulationOptions with = Small();
  // Two tasks per rank and narrow task times: the slow ranks' tasks make the job's tail.
  with.tasks = 80;
  with.sigma = 0.1;
  SimulationOptions without = with;
  without.scheduler.speculation.enabled = false;
  auto w = Simulate(with);
  auto wo = Simulate(without);
  EXPECT_GT(w.slow_ranks, 0u);
  EXPECT_GT(w.progress.speculative_copies, 0u);
  EXPECT_LT(w.job_seconds, wo.job_seconds)
      << w.progress.speculative_copies << " copies, " << w.progress.speculative_wins << " wins";
}

TEST(DistSimulation, TheLocalityWaitRaisesLocalLaunches) {
  SimulationOptions wait = Small();
  wait.scheduler.speculation.enabled = false;
  SimulationOptions none = wait;
  none.scheduler.locality.wait = 0;
  auto w = Simulate(wait);
  auto n = Simulate(none);
  EXPECT_GE(w.progress.local_launches, n.progress.local_launches);
  EXPECT_EQ(w.progress.committed, 400u);
}

TEST(DistSimulation, WithoutReplicasEveryTaskIsEquallyFar) {
  SimulationOptions o = Small();
  o.replicas = 0;
  auto r = Simulate(o);
  EXPECT_EQ(r.progress.local_launches, 0u);
  EXPECT_EQ(r.progress.remote_launches, 0u);
  EXPECT_EQ(r.progress.committed, 400u);
}

}  // namespace
}  // namespace sluice::dist

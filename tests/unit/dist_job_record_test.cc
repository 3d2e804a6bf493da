// JobRecord: each job's resumable state is its own, owned by one live run at a time, and
// only the records of dead runs are named for reclaiming (dist/job_record.h).
#include <gtest/gtest.h>

#include "publish_test_util.h"
#include "sluice/dist/job_record.h"
#include "sluice/io/file_system.h"

namespace sluice::dist {
namespace {

using format::testing::FakeProcesses;

// A file system on which a crashed process writes nothing more (its lock is not released).
class CrashingFileSystem final : public format::testing::ForwardingFileSystem {
 public:
  explicit CrashingFileSystem(io::FileSystem* base) : ForwardingFileSystem(base) {}
  bool crashed = false;
  Status PutIfAbsent(const std::string& p, ByteView data) override {
    if (crashed) return IoError("crashed");
    return ForwardingFileSystem::PutIfAbsent(p, data);
  }
};

class DistJobRecord : public ::testing::Test {
 protected:
  // Ends `record` as a crash would: its lock stays held by its (dead) process.
  void Crash(std::unique_ptr<JobRecord> record) {
    fs_->crashed = true;
    record.reset();
    fs_->crashed = false;
  }
  std::unique_ptr<io::FileSystem> memory_ = io::NewMemoryFileSystem();
  std::unique_ptr<CrashingFileSystem> fs_ = std::make_unique<CrashingFileSystem>(memory_.get());
  FakeProcesses processes_;
};

TEST_F(DistJobRecord, TwoJobsOnOneOutputHaveRecordsOfTheirOwn) {
  auto a = JobRecord::Acquire(fs_.get(), "/out", "job a", "sluice convert", processes_.As(1));
  auto b = JobRecord::Acquire(fs_.get(), "/out", "job b", "sluice convert", processes_.As(2));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE((*a)->Start(1, "tasks of a").ok());
  ASSERT_TRUE((*b)->Start(1, "tasks of b").ok());
  (*a)->Remove();  // a publishes: b's record is untouched
  auto list = (*b)->LoadTaskList();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(*list, "tasks of b");
  EXPECT_NE(JobRecord::DirFor("job a"), JobRecord::DirFor("job b"));
}

TEST_F(DistJobRecord, ASecondLiveRunOfTheSameJobIsRefusedNamingTheOwner) {
  auto first = JobRecord::Acquire(fs_.get(), "/out", "job", "sluice convert", processes_.As(1));
  ASSERT_TRUE(first.ok());
  auto second = JobRecord::Acquire(fs_.get(), "/out", "job", "sluice convert", processes_.As(2));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("pid 1"), std::string::npos)
      << second.status().ToString();
}

TEST_F(DistJobRecord, ARerunAfterTheOwnerDiedResumesItsRun) {
  std::string run;
  {
    auto first = JobRecord::Acquire(fs_.get(), "/out", "job", "sluice convert", processes_.As(1));
    ASSERT_TRUE(first.ok());
    EXPECT_FALSE((*first)->resuming());
    run = (*first)->run();
    ASSERT_TRUE((*first)->Start(3, "tasks").ok());
    processes_.Kill(1);
    Crash(std::move(*first));
  }
  auto rerun = JobRecord::Acquire(fs_.get(), "/out", "job", "sluice convert", processes_.As(2));
  ASSERT_TRUE(rerun.ok()) << rerun.status().ToString();
  EXPECT_TRUE((*rerun)->resuming());
  EXPECT_EQ((*rerun)->run(), run);
}

TEST_F(DistJobRecord, OnlyTheRecordsOfDeadRunsAreReclaimable) {
  auto live = JobRecord::Acquire(fs_.get(), "/out", "live", "sluice convert", processes_.As(1));
  auto dead = JobRecord::Acquire(fs_.get(), "/out", "dead", "sluice convert", processes_.As(2));
  auto foreign =
      JobRecord::Acquire(fs_.get(), "/out", "foreign", "sluice convert", processes_.As(3, "h2"));
  ASSERT_TRUE(live.ok() && dead.ok() && foreign.ok());
  processes_.Kill(2);
  processes_.Kill(3);  // on another host: its liveness is unknowable here
  Crash(std::move(*dead));
  Crash(std::move(*foreign));
  auto found = FindDeadJobRecords(fs_.get(), "/out", processes_.As(9));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].path, io::JoinPath("/out", JobRecord::DirFor("dead")));
  EXPECT_NE((*found)[0].reason.find("which is gone"), std::string::npos);
}

}  // namespace
}  // namespace sluice::dist

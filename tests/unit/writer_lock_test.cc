#include "sluice/format/writer_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "publish_test_util.h"

namespace sluice::format {
namespace {

using testing::FakeProcesses;

class WriterLockTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_->CreateDirs("/ds").ok()); }

  Result<std::unique_ptr<WriterLock>> Acquire(const std::string& run, int64_t pid,
                                              bool break_foreign = false) {
    WriterLockOptions options;
    options.run = run;
    options.command = "test " + run;
    options.probe = processes_.As(pid);
    options.break_foreign = break_foreign;
    return WriterLock::Acquire(fs_.get(), "/ds", options);
  }
  std::set<std::string> Names() { return testing::FileNames(fs_.get(), "/ds"); }
  void PutEntry(uint64_t number, const std::string& run, int64_t pid,
                const std::string& host = "here") {
    LockEntry e;
    e.run = run;
    e.writer = {pid, host, 0};
    ASSERT_TRUE(fs_->PutIfAbsent(WriterLock::EntryPath("/ds", number), e.ToJson()).ok());
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  FakeProcesses processes_;
};

TEST_F(WriterLockTest, SecondWriterIsRefusedNamingTheHolder) {
  auto first = Acquire("aaaaaaaaaaaa", 11);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = Acquire("bbbbbbbbbbbb", 12);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("/ds is being written by another writer: run "
                                           "aaaaaaaaaaaa (test aaaaaaaaaaaa), pid 11 on host "
                                           "here"),
            std::string::npos)
      << second.status().ToString();
  EXPECT_NE(second.status().message().find("lock /ds/.sluice-lock.1"), std::string::npos);
  EXPECT_EQ(Names(), std::set<std::string>{".sluice-lock.1"});  // the loser wrote nothing
}

TEST_F(WriterLockTest, ReleaseLeavesOneReleaseEntryAndNumbersGrow) {
  auto first = Acquire("aaaaaaaaaaaa", 11);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Release().ok());
  EXPECT_EQ(Names(), std::set<std::string>{".sluice-lock.2"});
  auto state = WriterLock::ReadState(fs_.get(), "/ds");
  ASSERT_TRUE(state.ok() && state->has_value());
  EXPECT_TRUE((*state)->released);

  auto second = Acquire("bbbbbbbbbbbb", 12);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)->entry().number, 3u);
  EXPECT_FALSE((*second)->taken_over().has_value());
  EXPECT_EQ(Names(), std::set<std::string>{".sluice-lock.3"});
}

TEST_F(WriterLockTest, LockOfADeadWriterIsTakenOver) {
  PutEntry(1, "aaaaaaaaaaaa", 11);  // a writer that crashed holding the lock
  processes_.Kill(11);
  auto next = Acquire("bbbbbbbbbbbb", 12);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  ASSERT_TRUE((*next)->taken_over().has_value());
  EXPECT_EQ((*next)->taken_over()->run, "aaaaaaaaaaaa");
  EXPECT_EQ(Names(), std::set<std::string>{".sluice-lock.2"});
}

TEST_F(WriterLockTest, LockOfAnotherHostIsTakenOverOnlyWhenAsked) {
  PutEntry(1, "aaaaaaaaaaaa", 11, "elsewhere");
  processes_.Kill(11);  // dead, but on another host: this host cannot know
  auto refused = Acquire("bbbbbbbbbbbb", 12);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("sluice clean --break-lock /ds"), std::string::npos)
      << refused.status().ToString();
  auto taken = Acquire("bbbbbbbbbbbb", 12, /*break_foreign=*/true);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
}

// Invariant 2: a writer whose entry lands below a newer one (it read an old state) backs off.
TEST_F(WriterLockTest, WriterWhoseEntryLandsBelowANewerOneBacksOff) {
  // Every put of entry N is followed at once by another writer's (live) entry N+1.
  class Racer final : public testing::ForwardingFileSystem {
   public:
    using ForwardingFileSystem::ForwardingFileSystem;
    Status PutIfAbsent(const std::string& path, ByteView data) override {
      SLUICE_RETURN_IF_ERROR(base()->PutIfAbsent(path, data));
      uint64_t n = 0;
      if (!raced_ && WriterLock::IsEntryName(io::Basename(path), &n)) {
        raced_ = true;
        LockEntry other;
        other.run = "cccccccccccc";
        other.writer = {13, "here", 0};
        (void)base()->PutIfAbsent(WriterLock::EntryPath("/ds", n + 1), other.ToJson());
      }
      return Status::OK();
    }

   private:
    bool raced_ = false;
  };
  Racer racer(fs_.get());
  WriterLockOptions options;
  options.run = "aaaaaaaaaaaa";
  options.probe = processes_.As(11);
  auto lock = WriterLock::Acquire(&racer, "/ds", options);
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("run cccccccccccc"), std::string::npos)
      << lock.status().ToString();
  EXPECT_EQ(Names(), std::set<std::string>{".sluice-lock.2"});  // its own entry 1 withdrawn
}

TEST_F(WriterLockTest, ConcurrentWritersExactlyOneHolds) {
  constexpr int kWriters = 8;
  std::atomic<int> holders{0};
  std::vector<std::unique_ptr<WriterLock>> locks(kWriters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      char run[13];
      std::snprintf(run, sizeof run, "%012x", i + 1);
      auto lock = Acquire(run, 100 + i);
      if (lock.ok()) {
        ++holders;
        locks[i] = std::move(*lock);
      } else {
        EXPECT_EQ(lock.status().code(), StatusCode::kFailedPrecondition)
            << lock.status().ToString();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(holders.load(), 1);
}

TEST_F(WriterLockTest, UnreadableTopEntryIsAnErrorNamingIt) {
  ASSERT_TRUE(fs_->WriteAll("/ds/.sluice-lock.4", "garbage").ok());
  auto lock = Acquire("aaaaaaaaaaaa", 11);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(lock.status().message().find("/ds/.sluice-lock.4: not a sluice lock entry"),
            std::string::npos);
}

TEST(WriterLockNames, EntryNames) {
  uint64_t n = 0;
  EXPECT_TRUE(WriterLock::IsEntryName(".sluice-lock.17", &n));
  EXPECT_EQ(n, 17u);
  EXPECT_FALSE(WriterLock::IsEntryName(".sluice-lock.17.put.tmp-4-5"));
  EXPECT_FALSE(WriterLock::IsEntryName(".sluice-lock."));
  EXPECT_FALSE(WriterLock::IsEntryName("sluice-lock.1"));
}

TEST(ThisProcessTest, KnowsItselfAndAReapedChild) {
  ProcessProbe* probe = ThisProcess();
  WriterIdentity me = probe->Self();
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_FALSE(me.host.empty());
  EXPECT_NE(me.start_ticks, 0u);
  EXPECT_FALSE(probe->IsGone(me));

  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(probe->IsGone({child, me.host, 0}));
  EXPECT_FALSE(probe->IsGone({child, me.host + "-other", 0}));  // another host: unknowable
  WriterIdentity reused = me;
  reused.start_ticks = me.start_ticks + 1;  // our pid, but a process started at another time
  EXPECT_TRUE(probe->IsGone(reused));
}

}  // namespace
// A writer that exited but was not reaped yet (the orphaned ranks of a killed mpirun job wait
// for init) still passes kill(pid, 0): its lock must count as a dead writer's.
TEST(WriterLockProcessProbe, ZombieWriterIsGone) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  WriterIdentity who = ThisProcess()->Self();
  who.pid = child;
  who.start_ticks = 0;
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {  // until the child has exited (a zombie now)
    gone = ThisProcess()->IsGone(who);
    if (!gone) ::usleep(10000);
  }
  EXPECT_TRUE(gone);
  EXPECT_FALSE(ThisProcess()->IsGone(ThisProcess()->Self()));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(ThisProcess()->IsGone(who));  // reaped: no such process
}

}  // namespace sluice::format

#include "sluice/io/fault_injection_file_system.h"

#include <gtest/gtest.h>

#include <csignal>

namespace sluice::io {
namespace {

TEST(FaultPlanTest, ParsesAndRefusesMalformedPlans) {
  auto plan = FaultPlan::Parse("crash:rename:3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->action, FaultPlan::Action::kCrash);
  EXPECT_FALSE(plan->any_op);
  EXPECT_EQ(plan->op, FaultOp::kRename);
  EXPECT_EQ(plan->at, 3u);
  EXPECT_TRUE(FaultPlan::Parse("count").ok());
  EXPECT_TRUE(FaultPlan::Parse("freeze:any:1").ok());
  for (const char* bad : {"", "crash", "crash:rename", "explode:any:1", "fail:read:1", "fail:any:0",
                          "fail:any:x", "fail:any:3x"}) {
    auto p = FaultPlan::Parse(bad);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  std::unique_ptr<FaultInjectionFileSystem> With(const std::string& plan) {
    return std::make_unique<FaultInjectionFileSystem>(base_.get(), *FaultPlan::Parse(plan));
  }
  std::unique_ptr<FileSystem> base_ = NewMemoryFileSystem();
};

TEST_F(FaultInjectionTest, CountsEveryChangingOperationAndNoRead) {
  auto fs = With("count");
  ASSERT_TRUE(fs->CreateDirs("/d").ok());
  ASSERT_TRUE(fs->WriteAll("/d/a", "12").ok());  // create, write, close
  ASSERT_TRUE(fs->Rename("/d/a", "/d/b").ok());
  ASSERT_TRUE(fs->PutIfAbsent("/d/c", "x").ok());
  ASSERT_TRUE(fs->ReadAll("/d/b").ok());
  ASSERT_TRUE(fs->Delete("/d/b").ok());
  EXPECT_EQ(fs->CountsText(), "create 1, write 1, close 1, rename 1, put 1, delete 1, mkdir 1");
  EXPECT_EQ(fs->total(), 7u);
}

TEST_F(FaultInjectionTest, FailsOnlyTheKthOperationOfItsKind) {
  auto fs = With("fail:put:2");
  ASSERT_TRUE(fs->PutIfAbsent("/a", "x").ok());
  Status second = fs->PutIfAbsent("/b", "x");
  EXPECT_EQ(second.code(), StatusCode::kIoError);
  EXPECT_NE(second.message().find("injected fault: put /b"), std::string::npos);
  EXPECT_FALSE(base_->Exists("/b"));  // nothing done
  EXPECT_TRUE(fs->PutIfAbsent("/c", "x").ok());
}

TEST_F(FaultInjectionTest, FailedCloseLeavesNoFile) {
  auto fs = With("fail:close:1");
  auto f = fs->OpenForWrite("/a");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("data").ok());
  EXPECT_EQ((*f)->Close().code(), StatusCode::kIoError);
  EXPECT_FALSE(base_->Exists("/a"));
}

TEST_F(FaultInjectionTest, FreezeStopsEveryLaterChangeButNotReads) {
  ASSERT_TRUE(base_->WriteAll("/keep", "k").ok());
  auto fs = With("freeze:any:2");
  ASSERT_TRUE(fs->PutIfAbsent("/a", "x").ok());
  EXPECT_FALSE(fs->frozen());
  EXPECT_EQ(fs->PutIfAbsent("/b", "x").code(), StatusCode::kIoError);
  EXPECT_TRUE(fs->frozen());
  EXPECT_EQ(fs->Delete("/a").code(), StatusCode::kIoError);
  EXPECT_EQ(fs->WriteAll("/c", "x").code(), StatusCode::kIoError);
  EXPECT_TRUE(fs->Exists("/a"));
  EXPECT_FALSE(fs->Exists("/b"));
  EXPECT_TRUE(fs->ReadAll("/keep").ok());
}

TEST_F(FaultInjectionTest, CrashKillsTheProcessBeforeTheOperation) {
  EXPECT_EXIT(
      {
        auto fs = With("crash:rename:1");
        (void)fs->PutIfAbsent("/a", "x");
        (void)fs->Rename("/a", "/b");
        std::_Exit(0);  // not reached
      },
      ::testing::KilledBySignal(SIGKILL), "");
}

}  // namespace
}  // namespace sluice::io

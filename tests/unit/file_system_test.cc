#include "sluice/io/file_system.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

namespace sluice::io {
namespace {

class FileSystemTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "local") {
      char tmpl[] = "/tmp/sluice_fs_test_XXXXXX";
      ASSERT_NE(::mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      fs_ = LocalFileSystem();
    } else {
      owned_ = NewMemoryFileSystem();
      fs_ = owned_.get();
      dir_ = "/mem";
      ASSERT_TRUE(fs_->CreateDirs(dir_).ok());
    }
  }
  void TearDown() override {
    if (GetParam() == "local") std::filesystem::remove_all(dir_);
  }
  std::string P(const std::string& name) { return JoinPath(dir_, name); }

  std::unique_ptr<FileSystem> owned_;
  FileSystem* fs_ = nullptr;
  std::string dir_;
};

TEST_P(FileSystemTest, WriteIsInvisibleUntilClose) {
  auto w = fs_->OpenForWrite(P("a.bin"));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append("hello ").ok());
  ASSERT_TRUE((*w)->Append("world").ok());
  EXPECT_FALSE(fs_->Exists(P("a.bin")));
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_TRUE(fs_->Exists(P("a.bin")));
  auto data = fs_->ReadAll(P("a.bin"));
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, "hello world");
}

TEST_P(FileSystemTest, AbortedWriteLeavesNothing) {
  {
    auto w = fs_->OpenForWrite(P("b.bin"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("partial").ok());
    // destroyed without Close
  }
  EXPECT_FALSE(fs_->Exists(P("b.bin")));
  auto list = fs_->List(dir_);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty()) << (*list)[0].path;  // no temp file left behind either
}

TEST_P(FileSystemTest, PositionalReadsAndEof) {
  ASSERT_TRUE(fs_->WriteAll(P("c.bin"), "0123456789").ok());
  auto f = fs_->OpenForRead(P("c.bin"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->size(), 10u);
  char buf[16];
  auto r = (*f)->Read(3, 4, buf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "3456");
  r = (*f)->Read(8, 10, buf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "89");
  r = (*f)->Read(10, 4, buf);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST_P(FileSystemTest, MissingFileIsNotFound) {
  auto f = fs_->OpenForRead(P("nope"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("nope"), std::string::npos);
}

TEST_P(FileSystemTest, ListGlobRename) {
  ASSERT_TRUE(fs_->CreateDirs(P("sub/deeper")).ok());
  for (auto n : {"train-1.tfrecord", "train-0.tfrecord", "val-0.tfrecord"}) {
    ASSERT_TRUE(fs_->WriteAll(P(std::string("sub/") + n), "x").ok());
  }
  auto g = fs_->Glob(P("sub/train-*.tfrecord"));
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0], P("sub/train-0.tfrecord"));
  EXPECT_EQ((*g)[1], P("sub/train-1.tfrecord"));
  auto g2 = fs_->Glob(P("s*/val-?.tfrecord"));
  ASSERT_TRUE(g2.ok());
  ASSERT_EQ(g2->size(), 1u);
  ASSERT_TRUE(fs_->Rename(P("sub/val-0.tfrecord"), P("sub/val-1.tfrecord")).ok());
  EXPECT_FALSE(fs_->Exists(P("sub/val-0.tfrecord")));
  EXPECT_TRUE(fs_->Exists(P("sub/val-1.tfrecord")));
  auto list = fs_->List(P("sub"));
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 4u);
  EXPECT_TRUE((*list)[0].is_directory);  // "deeper" sorts first
  ASSERT_TRUE(fs_->Delete(P("sub/val-1.tfrecord")).ok());
  EXPECT_EQ(fs_->Delete(P("sub/val-1.tfrecord")).code(), StatusCode::kNotFound);
}

TEST_P(FileSystemTest, MapSeesWholeFileAndOutlivesIt) {
  std::string payload(100000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(fs_->WriteAll(P("m.bin"), payload).ok());
  std::unique_ptr<FileMapping> mapping;
  {
    auto file = fs_->OpenForRead(P("m.bin"));
    ASSERT_TRUE(file.ok());
    auto m = (*file)->Map();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    mapping = std::move(*m);
  }  // the file object is gone; the mapping stays valid
  EXPECT_EQ(mapping->is_mapped(), GetParam() == "local");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapping->data().data()) % 16, 0u);
  EXPECT_EQ(mapping->data(), payload);
}

TEST_P(FileSystemTest, OnlyLocalNonEmptyFilesMapInPlace) {
  ASSERT_TRUE(fs_->WriteAll(P("m.bin"), "bytes").ok());
  ASSERT_TRUE(fs_->WriteAll(P("empty.bin"), "").ok());
  auto file = fs_->OpenForRead(P("m.bin"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->MapsInPlace(), GetParam() == "local");
  auto m = (*file)->Map();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->is_mapped(), (*file)->MapsInPlace());
  auto empty = fs_->OpenForRead(P("empty.bin"));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE((*empty)->MapsInPlace());
}

TEST_P(FileSystemTest, MapOfEmptyFileIsEmpty) {
  ASSERT_TRUE(fs_->WriteAll(P("empty.bin"), "").ok());
  auto file = fs_->OpenForRead(P("empty.bin"));
  ASSERT_TRUE(file.ok());
  auto m = (*file)->Map();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->data().empty());
}

INSTANTIATE_TEST_SUITE_P(Both, FileSystemTest, ::testing::Values("local", "memory"));

TEST_P(FileSystemTest, PutIfAbsentRefusesExistingFile) {
  ASSERT_TRUE(fs_->PutIfAbsent(P("00.json"), "first").ok());
  Status again = fs_->PutIfAbsent(P("00.json"), "second");
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  EXPECT_EQ(*fs_->ReadAll(P("00.json")), "first");
  // No temporary is left behind by either call.
  auto entries = fs_->List(dir_);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
}

TEST_P(FileSystemTest, PutIfAbsentRaceHasExactlyOneWinner) {
  for (int round = 0; round < 20; ++round) {
    const std::string path = P("race-" + std::to_string(round));
    std::vector<std::thread> threads;
    std::atomic<int> winners{0}, losers{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        Status s = fs_->PutIfAbsent(path, "writer " + std::to_string(t));
        if (s.ok()) winners++;
        else if (s.code() == StatusCode::kAlreadyExists) losers++;
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(losers.load(), 7);
  }
  auto entries = fs_->List(dir_);
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries->size(), 20u);  // no temporaries left
}

TEST_P(FileSystemTest, ReadAsyncDeliversRangeClippedAtEnd) {
  ASSERT_TRUE(fs_->WriteAll(P("r.bin"), "0123456789").ok());
  auto f = fs_->OpenForRead(P("r.bin"));
  ASSERT_TRUE(f.ok());
  auto read = [&](uint64_t offset, size_t n, std::shared_ptr<const CancelToken> cancel) {
    std::promise<Result<std::string>> p;
    IoContext ctx;
    ctx.cancel = std::move(cancel);
    (*f)->ReadAsync(offset, n, [&p](Result<std::string> r) { p.set_value(std::move(r)); }, ctx);
    return p.get_future().get();
  };
  EXPECT_EQ(*read(2, 3, nullptr), "234");
  EXPECT_EQ(*read(8, 100, nullptr), "89");
  EXPECT_EQ(*read(10, 4, nullptr), "");
  EXPECT_EQ(*read(50, 4, nullptr), "");
  auto token = std::make_shared<CancelToken>();
  token->Cancel();
  EXPECT_EQ(read(0, 4, token).status().code(), StatusCode::kCancelled);
}

TEST(FileSystemFor, DispatchesSchemes) {
  std::string p;
  auto fs = FileSystemFor("file:///tmp/x", &p);
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ(p, "/tmp/x");
  fs = FileSystemFor("data/x", &p);
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ(p, "data/x");
  fs = FileSystemFor("s3://bucket/x", &p);
  EXPECT_EQ(fs.status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace sluice::io

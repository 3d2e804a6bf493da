// The bound on open files of the local file system (LocalFileSystemOptions::max_open_files,
// src/io/open_file_cache.h): evicted files reopen by path, a file replaced or deleted since
// its open fails naming it, and running out of descriptors closes cached ones.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "sluice/io/file_system.h"

namespace sluice::io {
namespace {

// Descriptors this process has open now.
size_t OpenDescriptors() {
  size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (struct dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n - 1;  // the directory stream's own
}

class OpenFilesTest : public ::testing::Test {
 protected:
  OpenFilesTest() {
    char tmpl[] = "/tmp/sluice_open_files_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~OpenFilesTest() override { std::filesystem::remove_all(dir_); }

  std::string Write(FileSystem* fs, const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(fs->WriteAll(path, text).ok());
    return path;
  }
  static std::string ReadWhole(const RandomAccessFile& file) {
    std::string scratch(file.size(), '\0');
    auto got = file.Read(0, scratch.size(), scratch.data());
    return got.ok() ? std::string(*got) : "error: " + got.status().ToString();
  }

  std::string dir_;
};

TEST_F(OpenFilesTest, FilesBeyondTheBoundKeepNoDescriptorAndReadBack) {
  auto fs = NewLocalFileSystem({.sync = false, .max_open_files = 2});
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  const size_t before = OpenDescriptors();
  for (int i = 0; i < 6; ++i) {
    auto f = fs->OpenForRead(Write(fs.get(), "f" + std::to_string(i), "file " + std::to_string(i)));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    files.push_back(std::move(*f));
  }
  EXPECT_LE(OpenDescriptors(), before + 2);
  for (int round = 0; round < 3; ++round) {
    for (int i = 5; i >= 0; --i) {
      EXPECT_EQ(ReadWhole(*files[i]), "file " + std::to_string(i));
      EXPECT_LE(OpenDescriptors(), before + 2);
    }
  }
  auto mapping = files[0]->Map();  // maps through a reopened descriptor, keeps none
  ASSERT_TRUE(mapping.ok()) << mapping.status().ToString();
  EXPECT_EQ((*mapping)->data(), "file 0");
  files.clear();
  EXPECT_EQ(OpenDescriptors(), before);
}

TEST_F(OpenFilesTest, FileReplacedWhileClosedFailsNamingIt) {
  auto fs = NewLocalFileSystem({.sync = false, .max_open_files = 1});
  const std::string a = Write(fs.get(), "a", "old contents");
  auto file_a = fs->OpenForRead(a);
  auto file_b = fs->OpenForRead(Write(fs.get(), "b", "b"));  // closes a's descriptor
  ASSERT_TRUE(file_a.ok() && file_b.ok());
  Write(fs.get(), "a", "new contents");  // same size, another inode (rename into place)
  char scratch[32];
  auto got = (*file_a)->Read(0, 12, scratch);
  ASSERT_FALSE(got.ok()) << "read " << *got;
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(got.status().message().find(a + ": replaced or changed since it was opened"),
            std::string::npos)
      << got.status().ToString();
  EXPECT_EQ(ReadWhole(**file_b), "b");
}

TEST_F(OpenFilesTest, FileDeletedWhileClosedIsNotFoundNamingIt) {
  auto fs = NewLocalFileSystem({.sync = false, .max_open_files = 1});
  const std::string a = Write(fs.get(), "a", "contents");
  auto file_a = fs->OpenForRead(a);
  auto file_b = fs->OpenForRead(Write(fs.get(), "b", "b"));
  ASSERT_TRUE(file_a.ok() && file_b.ok());
  ASSERT_TRUE(fs->Delete(a).ok());
  char scratch[8];
  auto got = (*file_a)->Read(0, 8, scratch);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find(a + ": deleted since it was opened"), std::string::npos)
      << got.status().ToString();
}

TEST_F(OpenFilesTest, ManyThreadsReadMoreFilesThanTheBound) {
  auto fs = NewLocalFileSystem({.sync = false, .max_open_files = 3});
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  for (int i = 0; i < 16; ++i) {
    auto f = fs->OpenForRead(
        Write(fs.get(), "f" + std::to_string(i), std::string(100 + i, static_cast<char>('a' + i))));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    files.push_back(std::move(*f));
  }
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 2000; ++k) {
        const int i = (k * 7 + t) % 16;
        if (ReadWhole(*files[i]) != std::string(100 + i, static_cast<char>('a' + i))) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The process-wide local file system, under a descriptor limit lower than the files it has
// open: opening more closes the least recently used instead of failing "Too many open files".
TEST_F(OpenFilesTest, OpeningPastTheDescriptorLimitClosesIdleFiles) {
  FileSystem* fs = LocalFileSystem();
  std::vector<std::string> paths;
  for (int i = 0; i < 64; ++i)
    paths.push_back(Write(fs, "f" + std::to_string(i), "x" + std::to_string(i)));
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit low = saved;
  low.rlim_cur = OpenDescriptors() + 16;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  Status failed;
  for (const std::string& p : paths) {
    auto f = fs->OpenForRead(p);
    if (!f.ok()) {
      failed = f.status();
      break;
    }
    files.push_back(std::move(*f));
  }
  // The limit goes back up before the reads: at the ceiling, the sanitizers' own checks of a
  // virtual call (which open a pipe) would fail. Files closed above still reopen by path.
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  std::string wrong;
  for (size_t i = 0; i < files.size() && wrong.empty(); ++i) {
    if (ReadWhole(*files[i]) != "x" + std::to_string(i)) wrong = ReadWhole(*files[i]);
  }
  const size_t opened = files.size();
  files.clear();
  EXPECT_TRUE(failed.ok()) << failed.ToString();
  EXPECT_EQ(opened, paths.size());
  EXPECT_EQ(wrong, "");
}

}  // namespace
}  // namespace sluice::io

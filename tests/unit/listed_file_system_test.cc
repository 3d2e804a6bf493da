// ListedFileSystem: opens and stats of listed files are answered from the listing (through
// the base's OpenListedForRead), everything else goes to the base.
#include "sluice/io/listed_file_system.h"

#include <gtest/gtest.h>

namespace sluice::io {
namespace {

// The memory file system, counting the calls a ListedFileSystem makes of it.
class RecordingFileSystem final : public FileSystem {
 public:
  RecordingFileSystem() : base_(NewMemoryFileSystem()) {}
  std::string_view name() const override { return "recording"; }
  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override {
    ++opens;
    return base_->OpenForRead(path);
  }
  Result<std::unique_ptr<RandomAccessFile>> OpenListedForRead(const FileInfo& listed) override {
    ++listed_opens;
    last_listed = listed;
    return base_->OpenForRead(listed.path);
  }
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options) override {
    return base_->OpenForWrite(path, options);
  }
  Result<FileInfo> Stat(const std::string& path) override {
    ++stats;
    return base_->Stat(path);
  }
  Result<std::vector<FileInfo>> List(const std::string& dir) override { return base_->List(dir); }
  Status Delete(const std::string& path) override { return base_->Delete(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }

  int opens = 0, listed_opens = 0, stats = 0;
  FileInfo last_listed;

 private:
  std::unique_ptr<FileSystem> base_;
};

TEST(ListedFileSystem, ListedFilesOpenAndStatFromTheListing) {
  RecordingFileSystem base;
  ASSERT_TRUE(base.WriteAll("/d/a", "aaaa").ok());
  ASSERT_TRUE(base.WriteAll("/d/b", "bb").ok());
  auto listing = base.List("/d");
  ASSERT_TRUE(listing.ok());
  (*listing)[0].etag = "\"e-a\"";
  ListedFileSystem fs(&base, *listing);
  EXPECT_EQ(fs.listed_files(), 2u);
  EXPECT_EQ(fs.name(), "recording");

  auto a = fs.OpenForRead("/d/a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->size(), 4u);
  EXPECT_EQ(base.listed_opens, 1);
  EXPECT_EQ(base.opens, 0);
  EXPECT_EQ(base.last_listed.etag, "\"e-a\"") << "the listed entry is handed on whole";
  auto info = fs.Stat("/d/b");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 2u);
  EXPECT_EQ(base.stats, 0);
}

TEST(ListedFileSystem, FilesOutsideTheListingAndDirectoriesGoToTheBase) {
  RecordingFileSystem base;
  ASSERT_TRUE(base.WriteAll("/d/sub/x", "x").ok());
  ASSERT_TRUE(base.WriteAll("/d/a", "a").ok());
  auto listing = base.List("/d");
  ASSERT_TRUE(listing.ok());
  ListedFileSystem fs(&base, *listing);
  EXPECT_EQ(fs.listed_files(), 1u) << "the directory /d/sub is not a listed file";
  ASSERT_TRUE(base.WriteAll("/d/later", "new").ok());  // written after the listing
  auto later = fs.OpenForRead("/d/later");
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(base.opens, 1);
  EXPECT_EQ(base.listed_opens, 0);
  EXPECT_TRUE(fs.Stat("/d/sub").ok());
  EXPECT_EQ(base.stats, 1);
  EXPECT_EQ(fs.OpenForRead("/d/none").status().code(), StatusCode::kNotFound);
}

TEST(ListedFileSystem, WritesGoToTheBase) {
  RecordingFileSystem base;
  ListedFileSystem fs(&base, {});
  ASSERT_TRUE(fs.WriteAll("/w", "payload").ok());
  auto got = base.ReadAll("/w");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "payload");
}

}  // namespace
}  // namespace sluice::io

// The shared FileSystem suite on S3 against a real server (Ceph RGW, ctest fixture), plain
// and under the seeded latency wrapper.
#include <gtest/gtest.h>
#include <unistd.h>

#include "sluice/io/slow_file_system.h"
#include "unit/file_system_suite.h"
#include "unit/s3_test_server.h"

namespace sluice::io {
namespace {

using testing::FileSystemBackend;
using testing::FileSystemCase;
using testing::FileSystemTest;

constexpr char kBucket[] = "sluice-suite";

class S3Backend final : public FileSystemBackend {
 public:
  explicit S3Backend(bool slow) {
    S3Options o = *testing::TestServerOptions();
    o.part_size = 5u << 20;  // S3's smallest: the 12 MiB test file takes three parts
    fs_ = std::move(NewS3FileSystem(o)).value();
    root_ = std::string("s3://") + kBucket + "/" + testing::UniquePrefix("suite");
    if (slow) {
      SlowOptions so;
      so.min_latency = std::chrono::microseconds(0);
      so.max_latency = std::chrono::microseconds(1000);
      so.seed = 7;
      slow_ = NewSlowFileSystem(fs_.get(), so);
    }
  }
  FileSystem* fs() override { return slow_ ? slow_.get() : fs_.get(); }
  const std::string& root() const override { return root_; }

 private:
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<FileSystem> slow_;
  std::string root_;
};

std::vector<FileSystemCase> S3Cases() {
  testing::FileSystemCapabilities caps;
  caps.empty_directories = false;
  caps.delete_missing_is_not_found = false;
  auto options = testing::TestServerOptions();
  if (!options.has_value()) {
    return {{"s3", caps, nullptr, testing::kNoServer},
            {"slow_s3", caps, nullptr, testing::kNoServer}};
  }
  Status made = testing::CreateBucket(*options, kBucket);
  if (!made.ok()) {
    const std::string why = "cannot create bucket: " + made.ToString();
    return {{"s3", caps, nullptr, why}, {"slow_s3", caps, nullptr, why}};
  }
  return {{"s3", caps, [] { return std::unique_ptr<FileSystemBackend>(new S3Backend(false)); }, ""},
          {"slow_s3", caps, [] { return std::unique_ptr<FileSystemBackend>(new S3Backend(true)); },
           ""}};
}

INSTANTIATE_TEST_SUITE_P(S3Server, FileSystemTest, ::testing::ValuesIn(S3Cases()),
                         testing::CaseName);

}  // namespace
}  // namespace sluice::io

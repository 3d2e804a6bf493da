// The shared FileSystem test suite (tests in file_system_test.cc): every backend (local,
// memory, S3 on a real server, each also under a seeded latency wrapper) runs the same tests,
// with capability flags for what a backend cannot do, like arrow's GenericFileSystemTest.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "sluice/io/file_system.h"

namespace sluice::io::testing {

struct FileSystemCapabilities {
  bool maps_in_place = false;  // Map() maps the file (local disk)
  // CreateDirs leaves an empty directory that List shows (not S3: a prefix exists only
  // through the objects under it).
  bool empty_directories = true;
  // Deleting a missing file is NotFound (not S3: DELETE is idempotent).
  bool delete_missing_is_not_found = true;
};

// A backend under test: a file system and a fresh, empty directory for one test.
class FileSystemBackend {
 public:
  virtual ~FileSystemBackend() = default;
  virtual FileSystem* fs() = 0;
  virtual const std::string& root() const = 0;
};

struct FileSystemCase {
  std::string name;
  FileSystemCapabilities caps;
  // Null when the backend cannot run here (the test is skipped, saying why).
  std::function<std::unique_ptr<FileSystemBackend>()> make;
  std::string unavailable_reason;
};

class FileSystemSuite : public ::testing::TestWithParam<FileSystemCase> {
 protected:
  void SetUp() override {
    if (!GetParam().make) GTEST_SKIP() << GetParam().unavailable_reason;
    backend_ = GetParam().make();
    ASSERT_NE(backend_, nullptr);
    fs_ = backend_->fs();
    dir_ = backend_->root();
  }
  void TearDown() override { backend_.reset(); }
  std::string P(const std::string& name) const { return JoinPath(dir_, name); }
  const FileSystemCapabilities& caps() const { return GetParam().caps; }

  std::unique_ptr<FileSystemBackend> backend_;
  FileSystem* fs_ = nullptr;
  std::string dir_;
};

inline void PrintTo(const FileSystemCase& c, std::ostream* os) { *os << c.name; }

// The suite's name in test names ("Backends/FileSystemTest.ListGlobRename/local").
using FileSystemTest = FileSystemSuite;

inline std::string CaseName(const ::testing::TestParamInfo<FileSystemCase>& info) {
  return info.param.name;
}

}  // namespace sluice::io::testing

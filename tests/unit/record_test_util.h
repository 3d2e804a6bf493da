// Helpers shared by the record-layer tests: deterministic record sets, shard writing and
// whole-file reading through the public API.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sluice/format/record_reader.h"
#include "sluice/format/record_writer.h"
#include "sluice/io/file_system.h"

namespace sluice::format::testing {

// `n` records with lengths in [min_len, max_len] and pseudo-random, seed-determined bytes.
inline std::vector<std::string> MakeRecords(size_t n, size_t min_len, size_t max_len,
                                            uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> len(min_len, max_len);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string r(len(rng), '\0');
    for (auto& c : r) c = static_cast<char>(rng() & 0xFF);
    out.push_back(std::move(r));
  }
  return out;
}

inline Status WriteShard(io::FileSystem* fs, const std::string& path,
                         const std::vector<std::string>& records,
                         const RecordWriterOptions& options = {}) {
  SLUICE_ASSIGN_OR_RETURN(auto writer, RecordWriter::Open(fs, path, options));
  for (const auto& r : records) SLUICE_RETURN_IF_ERROR(writer->Write(r));
  return writer->Close();
}

struct ReadResult {
  Status status;
  std::vector<std::string> records;
  std::vector<SkippedRange> skipped;
  std::vector<std::string> warnings;
};

inline ReadResult ReadShard(io::FileSystem* fs, const std::string& path,
                            const RecordReaderOptions& options = {}) {
  ReadResult out;
  auto reader = RecordReader::Open(fs, path, options);
  if (!reader.ok()) {
    out.status = reader.status();
    return out;
  }
  ByteView record;
  for (;;) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) {
      out.status = more.status();
      break;
    }
    if (!*more) break;
    out.records.emplace_back(record);
  }
  out.skipped = (*reader)->skipped();
  out.warnings = (*reader)->warnings();
  return out;
}

inline RecordReaderOptions SkipMode() {
  RecordReaderOptions o;
  o.policy = CorruptionPolicy::kSkip;
  return o;
}

inline RecordReaderOptions TolerateTornTail() {
  RecordReaderOptions o;
  o.tolerate_torn_tail = true;
  return o;
}

// A scratch directory on local disk, removed at destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sluice_record_test_XXXXXX";
    path_ = ::mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// "memory" or "local": the file system a parameterized test runs on.
class FileSystemFixture {
 public:
  explicit FileSystemFixture(const std::string& kind) {
    if (kind == "local") {
      tmp_ = std::make_unique<TempDir>();
      fs_ = io::LocalFileSystem();
      dir_ = tmp_->path();
    } else {
      owned_ = io::NewMemoryFileSystem();
      fs_ = owned_.get();
      dir_ = "/mem";
    }
  }
  io::FileSystem* fs() const { return fs_; }
  std::string Path(const std::string& name) const { return io::JoinPath(dir_, name); }

 private:
  std::unique_ptr<TempDir> tmp_;
  std::unique_ptr<io::FileSystem> owned_;
  io::FileSystem* fs_ = nullptr;
  std::string dir_;
};

}  // namespace sluice::format::testing

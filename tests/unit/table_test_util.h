// Helpers of the table tests: tables in an in-memory file system, shards of numbered
// records, a controllable clock and LogStore wrappers that race or fail.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/format/shard_index.h"
#include "sluice/io/file_system.h"
#include "sluice/table/log_store.h"
#include "sluice/table/table.h"
#include "sluice/table/table_writer.h"
#include "sluice/table/timestamp.h"

namespace sluice::table::testing {

inline OpenOptions AtVersion(int64_t version) {
  OpenOptions o;
  o.version = version;
  return o;
}
inline OpenOptions AtTime(int64_t timestamp_ms) {
  OpenOptions o;
  o.timestamp_ms = timestamp_ms;
  return o;
}

inline std::string Record(int i) { return "record-" + std::to_string(i); }

// A shard of records first..first+n-1 under `root`, described for a commit.
inline DataFile WriteShard(io::FileSystem* fs, const std::string& root, int first, int n,
                           const PartitionValues& partition = {}) {
  TableWriterOptions o;
  o.partition_values = partition;
  auto w = TableWriter::Open(fs, root, o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  for (int i = first; i < first + n; ++i) EXPECT_TRUE((*w)->Write(Record(i)).ok());
  auto files = (*w)->Finish();
  EXPECT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->size(), 1u);
  return files->at(0);
}

// Every record of a table version, file by file in path order.
inline std::vector<std::string> ReadAll(const Table& t) {
  std::vector<std::string> out;
  for (const DataFile& f : t.files()) {
    auto path = t.FilePath(f);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    auto reader = format::ShardReader::Open(t.fs(), *path);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    std::string r;
    for (uint64_t i = 0; i < (*reader)->num_records(); ++i) {
      EXPECT_TRUE((*reader)->Read(i, &r).ok());
      out.push_back(r);
    }
  }
  return out;
}

inline std::vector<std::string> Paths(const Table& t) {
  std::vector<std::string> out;
  for (const DataFile& f : t.files()) out.push_back(f.path);
  return out;
}

// Passes every call through; `before_put` runs before the first PutIfAbsent of a commit
// file (once), so that another writer can win the race deterministically.
class RacingStore final : public LogStore {
 public:
  RacingStore(io::FileSystem* fs, std::function<void()> before_put)
      : inner_(NewFileSystemLogStore(fs)), before_put_(std::move(before_put)) {}
  Result<std::vector<LogFileMeta>> List(const std::string& dir, std::string_view after) override {
    ++lists;
    return inner_->List(dir, after);
  }
  Result<std::string> Read(const std::string& path) override {
    ++reads;
    return inner_->Read(path);
  }
  Status PutIfAbsent(const std::string& path, std::string_view data) override {
    if (before_put_ && path.find(".checkpoint.") == std::string::npos) {
      auto hook = std::move(before_put_);
      before_put_ = nullptr;
      hook();
    }
    ++puts;
    if (fail_puts > 0) {
      --fail_puts;
      if (land_failed_puts) (void)inner_->PutIfAbsent(path, data);
      return IoError("injected: connection reset during put of " + path);
    }
    return inner_->PutIfAbsent(path, data);
  }
  Status Put(const std::string& path, std::string_view data) override {
    return inner_->Put(path, data);
  }
  Result<LogFileMeta> Head(const std::string& path) override { return inner_->Head(path); }
  Status Delete(const std::string& path) override { return inner_->Delete(path); }

  int lists = 0, reads = 0, puts = 0;
  int fail_puts = 0;              // the next N puts fail with IoError ...
  bool land_failed_puts = false;  // ... after (true) or without (false) writing the file

 private:
  std::unique_ptr<LogStore> inner_;
  std::function<void()> before_put_;
};

// A clock tests move by hand; starts now (so that file modification times, which the memory
// file system takes from the real clock, compare sensibly with it).
struct ManualClock {
  std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(NowMs());
  std::function<int64_t()> fn() const {
    return [n = now] { return n->load(); };
  }
  void Advance(int64_t ms) { *now += ms; }
};

}  // namespace sluice::table::testing

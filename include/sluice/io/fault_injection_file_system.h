// A FileSystem wrapper for tests that fails, or "crashes", at the k-th operation that changes
// storage (after LevelDB's FaultInjectionTestEnv). Crash tests use it to stop a writer at
// every rename and publication and check that what is left is either nothing or a complete
// dataset (docs/manifest.md, "Commit point"); `sluice` installs it when the test-only
// environment variable SLUICE_FAULT_INJECTION is set (docs/cli.md, "Testing").
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/io/file_system.h"

namespace sluice::io {

// The operations that change storage, counted separately. Reads are never counted.
enum class FaultOp : uint8_t {
  kCreate,  // OpenForWrite (a local file system creates the temporary)
  kWrite,   // WritableFile::Append
  kClose,   // WritableFile::Close (the temporary is renamed into place)
  kRename,  // FileSystem::Rename
  kPut,     // FileSystem::PutIfAbsent
  kDelete,  // FileSystem::Delete
  kMkdir,   // FileSystem::CreateDirs
};
inline constexpr size_t kFaultOpCount = 7;
std::string_view FaultOpName(FaultOp op);

struct FaultPlan {
  enum class Action : uint8_t {
    kNone,    // only count
    kFail,    // the k-th counted operation returns IoError and does nothing; later ones run
    kCrash,   // the process is killed (SIGKILL) just before the k-th counted operation
    kFreeze,  // the k-th and every later changing operation fail and do nothing: what storage
              // looks like after a crash, while the process (a unit test) keeps running.
              // Exact on the memory file system; on local disk an aborted writer still
              // removes its temporary, which a real crash would leave behind.
  };
  Action action = Action::kNone;
  bool any_op = true;  // count every operation, or only `op`
  FaultOp op = FaultOp::kWrite;
  uint64_t at = 0;  // 1-based position among the counted operations

  // "count" | "<fail|crash|freeze>:<any|create|write|close|rename|put|delete|mkdir>:<k>",
  // e.g. "crash:rename:3" kills the process before its third Rename.
  static Result<FaultPlan> Parse(std::string_view text);
};

// Threading: as the wrapped file system; the counters are atomic.
class FaultInjectionFileSystem final : public FileSystem {
 public:
  // `base` must outlive this object.
  FaultInjectionFileSystem(FileSystem* base, FaultPlan plan) : base_(base), plan_(plan) {}

  // Operations of kind `op` started so far (including a failed or frozen one).
  uint64_t count(FaultOp op) const { return counts_[static_cast<size_t>(op)].load(); }
  uint64_t total() const;
  // "create 3, write 40, close 3, rename 0, put 2, delete 1, mkdir 1"
  std::string CountsText() const;
  bool frozen() const { return frozen_.load(); }

  // Counts `op` on `path` and applies the plan: OK to go ahead, or the injected error (or
  // no return at all, for a crash). Used by the wrapped writable files too.
  Status Check(FaultOp op, const std::string& path);

  std::string_view name() const override { return base_->name(); }
  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override {
    return base_->OpenForRead(path);
  }
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options = {}) override;
  Result<FileInfo> Stat(const std::string& path) override { return base_->Stat(path); }
  Result<std::vector<FileInfo>> List(const std::string& dir) override { return base_->List(dir); }
  Status Delete(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status CreateDirs(const std::string& dir) override;
  Status PutIfAbsent(const std::string& path, ByteView data) override;
  Result<std::string> RealPath(const std::string& path) override { return base_->RealPath(path); }

 private:
  FileSystem* const base_;
  const FaultPlan plan_;
  std::array<std::atomic<uint64_t>, kFaultOpCount> counts_{};
  std::atomic<uint64_t> any_count_{0};
  std::atomic<bool> frozen_{false};
};

// For command-line tools: the plan in the environment variable SLUICE_FAULT_INJECTION
// (unset or empty: none). A malformed value is an InvalidArgument naming the variable.
Result<std::optional<FaultPlan>> FaultPlanFromEnvironment();

}  // namespace sluice::io

// Helpers of the publication tests (writer lock, publisher, shard writer): fake processes
// for the lock's stale rule, a forwarding file system to override one call, file listings.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "sluice/format/writer_lock.h"
#include "sluice/io/file_system.h"

namespace sluice::format::testing {

// Processes on hosts, alive until killed: ProcessProbe As(pid) is "this process" for a
// writer; IsGone follows the real rule (only this host's processes can be judged).
class FakeProcesses {
 public:
  ProcessProbe* As(int64_t pid, const std::string& host = "here") {
    std::lock_guard<std::mutex> l(mu_);
    auto& probe = probes_[{pid, host}];
    if (!probe)
      probe = std::make_unique<Probe>(this, WriterIdentity{pid, host, 1000 + uint64_t(pid)});
    return probe.get();
  }
  void Kill(int64_t pid) {
    std::lock_guard<std::mutex> l(mu_);
    dead_.insert(pid);
  }

 private:
  class Probe final : public ProcessProbe {
   public:
    Probe(FakeProcesses* all, WriterIdentity self) : all_(all), self_(std::move(self)) {}
    WriterIdentity Self() const override { return self_; }
    bool IsGone(const WriterIdentity& who) const override {
      std::lock_guard<std::mutex> l(all_->mu_);
      return who.host == self_.host && all_->dead_.count(who.pid) != 0;
    }

   private:
    FakeProcesses* all_;
    WriterIdentity self_;
  };

  std::mutex mu_;
  std::map<std::pair<int64_t, std::string>, std::unique_ptr<Probe>> probes_;  // guarded by mu_
  std::set<int64_t> dead_;                                                    // guarded by mu_
};

// Passes every call to `base`; tests override the one they want to disturb.
class ForwardingFileSystem : public io::FileSystem {
 public:
  explicit ForwardingFileSystem(io::FileSystem* base) : base_(base) {}
  io::FileSystem* base() const { return base_; }
  std::string_view name() const override { return base_->name(); }
  Result<std::unique_ptr<io::RandomAccessFile>> OpenForRead(const std::string& p) override {
    return base_->OpenForRead(p);
  }
  Result<std::unique_ptr<io::WritableFile>> OpenForWrite(const std::string& p,
                                                         const io::WriteOptions& o) override {
    return base_->OpenForWrite(p, o);
  }
  Result<io::FileInfo> Stat(const std::string& p) override { return base_->Stat(p); }
  Result<std::vector<io::FileInfo>> List(const std::string& d) override { return base_->List(d); }
  Status Delete(const std::string& p) override { return base_->Delete(p); }
  Status Rename(const std::string& f, const std::string& t) override { return base_->Rename(f, t); }
  Status CreateDirs(const std::string& d) override { return base_->CreateDirs(d); }
  Status PutIfAbsent(const std::string& p, ByteView data) override {
    return base_->PutIfAbsent(p, data);
  }

 private:
  io::FileSystem* base_;
};

// Names of the files directly in `dir` (none if it does not exist).
inline std::set<std::string> FileNames(io::FileSystem* fs, const std::string& dir) {
  std::set<std::string> names;
  auto list = fs->List(dir);
  if (!list.ok()) return names;
  for (const auto& e : *list) names.emplace(io::Basename(e.path));
  return names;
}

}  // namespace sluice::format::testing

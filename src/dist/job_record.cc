#include "sluice/dist/job_record.h"

#include <xxhash.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace sluice::dist {
namespace {

using Json = nlohmann::json;

constexpr const char* kJobFile = "job.json";     // written last: the record's commit point
constexpr const char* kTasksFile = "tasks.bin";  // the task list, as planned by the first run
constexpr int kCreateAttempts = 16;

std::string IdentityHash(const std::string& identity) {
  XXH128_hash_t h = XXH3_128bits(identity.data(), identity.size());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

// The run an earlier run of the job recorded in `dir`, or "".
std::string RecordedRun(io::FileSystem* fs, const std::string& dir, const std::string& hash) {
  auto record = fs->ReadAll(io::JoinPath(dir, kJobFile));
  if (!record.ok()) return "";
  try {
    Json j = Json::parse(*record);
    if (j.at("identity").get<std::string>() != hash) return "";
    std::string run = j.at("run").get<std::string>();
    return format::IsRunId(run) ? run : "";
  } catch (const Json::exception&) {
    return "";  // an unreadable record is started afresh
  }
}

}  // namespace

std::string JobRecord::DirFor(const std::string& identity) {
  return io::JoinPath(kRootDir, IdentityHash(identity));
}

std::string JobRecord::TaskFileName(TaskId task) {
  char name[40];
  std::snprintf(name, sizeof name, "task-%06llu.json", static_cast<unsigned long long>(task));
  return name;
}

Result<std::unique_ptr<JobRecord>> JobRecord::Acquire(io::FileSystem* fs,
                                                      const std::string& out_dir,
                                                      const std::string& identity,
                                                      const std::string& command,
                                                      format::ProcessProbe* probe) {
  std::unique_ptr<JobRecord> r(new JobRecord(fs, io::JoinPath(out_dir, DirFor(identity))));
  r->identity_hash_ = IdentityHash(identity);
  format::WriterLockOptions lock;
  lock.command = command;
  lock.probe = probe;
  // Another job's owner removes .sluice-job/ once it is empty, and a reclaimer removes a
  // record no lock holds yet: a directory vanishing under us is tried again (bounded).
  Result<std::unique_ptr<format::WriterLock>> taken = Internal("not tried");
  for (int attempt = 0; attempt < kCreateAttempts; ++attempt) {
    Status made = fs->CreateDirs(r->dir_);
    if (made.ok()) {
      // Read before the lock is ours, used only once it is: the owner is the only writer.
      std::string prior = RecordedRun(fs, r->dir_, r->identity_hash_);
      lock.run = prior.empty() ? format::NewRunId() : prior;
      taken = format::WriterLock::Acquire(fs, r->dir_, lock);
      if (taken.ok() || fs->Exists(r->dir_)) break;
    } else {
      taken = made;
    }
  }
  if (!taken.ok()) {
    if (taken.status().code() != StatusCode::kFailedPrecondition) return taken.status();
    return taken.status().WithContext(
        "another run of the same job owns its resumable state (one run of a job at a time; "
        "a different command or input is a different job)");
  }
  r->lock_ = std::move(*taken);
  // The record may have changed while the lock was free: read it again, as its owner.
  r->run_ = RecordedRun(fs, r->dir_, r->identity_hash_);
  r->resuming_ = !r->run_.empty();
  if (!r->resuming_) r->run_ = lock.run;
  return r;
}

JobRecord::~JobRecord() {
  if (lock_) (void)lock_->Release();
}

std::string JobRecord::Path(const std::string& name) const { return io::JoinPath(dir_, name); }

void JobRecord::DeleteRecordFiles() {
  auto entries = fs_->List(dir_);
  if (!entries.ok()) return;
  for (const auto& e : *entries) {
    if (format::WriterLock::IsEntryName(io::Basename(e.path))) continue;
    DeleteJobRecordTree(fs_, e.path);
  }
}

Status JobRecord::Start(uint64_t tasks, const std::string& task_list) {
  DeleteRecordFiles();
  SLUICE_RETURN_IF_ERROR(fs_->WriteAll(Path(kTasksFile), task_list));
  Json j{{"identity", identity_hash_}, {"run", run_}, {"tasks", tasks}};
  return fs_->WriteAll(Path(kJobFile), j.dump());
}

Result<std::string> JobRecord::LoadTaskList() const { return fs_->ReadAll(Path(kTasksFile)); }

void JobRecord::Remove() {
  if (!lock_) return;
  DeleteRecordFiles();
  const uint64_t released = lock_->entry().number + 1;
  Status s = lock_->Release();
  lock_.reset();
  // The release entry is the highest unless another run of the job took the lock since.
  if (s.ok()) (void)fs_->Delete(format::WriterLock::EntryPath(dir_, released));
  std::error_code ignored;  // a local directory goes when empty; object stores have none
  if (fs_->name() == "local") {
    std::filesystem::remove(dir_, ignored);
    std::filesystem::remove(std::filesystem::path(dir_).parent_path(), ignored);
  }
}

void DeleteJobRecordTree(io::FileSystem* fs, const std::string& path) {
  auto info = fs->Stat(path);
  if (info.ok() && !info->is_directory) {
    (void)fs->Delete(path);
    return;
  }
  auto entries = fs->List(path);
  if (entries.ok()) {
    for (const auto& e : *entries) {
      if (e.is_directory) {
        DeleteJobRecordTree(fs, e.path);
      } else {
        (void)fs->Delete(e.path);
      }
    }
  }
  std::error_code ignored;
  if (fs->name() == "local") std::filesystem::remove(path, ignored);
}

Result<std::vector<format::Leftover>> FindDeadJobRecords(io::FileSystem* fs,
                                                         const std::string& out_dir,
                                                         format::ProcessProbe* probe) {
  if (probe == nullptr) probe = format::ThisProcess();
  std::vector<format::Leftover> dead;
  const std::string root = io::JoinPath(out_dir, JobRecord::kRootDir);
  auto entries = fs->List(root);
  if (!entries.ok()) {
    if (entries.status().code() == StatusCode::kNotFound) return dead;
    return entries.status();
  }
  for (const auto& e : *entries) {
    if (!e.is_directory) {
      dead.push_back({e.path, "job state of an older sluice's layout"});
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(std::optional<format::LockEntry> top,
                            format::WriterLock::ReadState(fs, e.path));
    if (!top) {
      dead.push_back({e.path, "resumable state of a job no run owns"});
    } else if (top->released) {
      dead.push_back({e.path, "resumable state of run " + top->run + ", which ended"});
    } else if (probe->IsGone(top->writer)) {  // never true of another host's process
      dead.push_back({e.path, "resumable state of " + top->Describe() + ", which is gone"});
    }
  }
  return dead;
}

}  // namespace sluice::dist

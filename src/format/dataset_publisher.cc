// DatasetPublisher and the run-file rules: run ids, leftovers, unpublished output
// (include/sluice/format/dataset_publisher.h has the protocol).
#include "sluice/format/dataset_publisher.h"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>

namespace sluice::format {
namespace {

constexpr size_t kRunIdLength = 12;

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// "<name>.tmp-<pid>-<n>" (and "<name>.put.tmp-<pid>-<n>" of PutIfAbsent): the name the
// temporary was for and the writing process, or false when `file` is no temporary.
bool ParseTemporary(std::string_view file, std::string* target, int64_t* pid) {
  size_t at = file.rfind(".tmp-");
  if (at == std::string_view::npos) return false;
  std::string_view stem = file.substr(0, at);
  if (stem.ends_with(".put")) stem.remove_suffix(4);
  *target = std::string(stem);
  *pid = std::strtoll(std::string(file.substr(at + 5)).c_str(), nullptr, 10);
  return true;
}

std::string ExistsMessage(const std::string& path) {
  return path +
         " exists: refusing to write a dataset over another one (--overwrite replaces "
         "it; readers then see the old dataset until the new one is complete)";
}

// Deletes `leftovers` (best effort: what stays is found again next time).
void DeleteAll(io::FileSystem* fs, const std::vector<Leftover>& leftovers) {
  for (const auto& l : leftovers) (void)fs->Delete(l.path);
}

}  // namespace

std::string NewRunId() {
  std::random_device entropy;
  uint64_t bits = (uint64_t{entropy()} << 32) ^ entropy();
  char buf[kRunIdLength + 1];
  std::snprintf(buf, sizeof buf, "%012llx",
                static_cast<unsigned long long>(bits & ((uint64_t{1} << 48) - 1)));
  return buf;
}

bool IsRunId(std::string_view text) {
  if (text.size() != kRunIdLength) return false;
  for (char c : text) {
    if (!IsLowerHex(c)) return false;
  }
  return true;
}

std::optional<std::string> RunIdOfFileName(std::string_view name) {
  for (size_t dash = name.find('-'); dash != std::string_view::npos;
       dash = name.find('-', dash + 1)) {
    const size_t end = dash + 1 + kRunIdLength;
    if (end >= name.size() || (name[end] != '-' && name[end] != '.')) continue;
    std::string_view candidate = name.substr(dash + 1, kRunIdLength);
    if (IsRunId(candidate)) return std::string(candidate);
  }
  return std::nullopt;
}

Result<std::vector<Leftover>> FindLeftovers(io::FileSystem* fs, const std::string& dir,
                                            const Manifest* published, std::string_view own_run,
                                            ProcessProbe* probe) {
  if (probe == nullptr) probe = ThisProcess();
  std::vector<Leftover> out;
  std::vector<uint64_t> numbers;
  SLUICE_ASSIGN_OR_RETURN(std::optional<LockEntry> lock, WriterLock::ReadState(fs, dir, &numbers));
  std::string live_run;
  if (lock && !lock->released) {
    if (lock->run != own_run && probe->IsGone(lock->writer)) {
      out.push_back({WriterLock::EntryPath(dir, lock->number),
                     "writer lock of an interrupted run: " + lock->Describe() + " (gone)"});
    } else {
      live_run = lock->run;
    }
  }
  for (size_t i = 0; i + 1 < numbers.size(); ++i) {
    out.push_back({WriterLock::EntryPath(dir, numbers[i]), "superseded writer-lock entry"});
  }
  std::set<std::string> used;
  if (published != nullptr) {
    for (const std::string& f : published->Files()) used.insert(f);
  }
  const bool writer_elsewhere = !live_run.empty() && live_run != own_run;
  SLUICE_ASSIGN_OR_RETURN(auto files, fs->List(dir));
  for (const auto& f : files) {
    const std::string name(io::Basename(f.path));
    if (f.is_directory || WriterLock::IsEntryName(name) || used.count(name) != 0) continue;
    std::string target;
    int64_t pid = 0;
    if (auto run = RunIdOfFileName(name)) {
      if (*run == live_run || *run == own_run) continue;
      out.push_back({f.path, "file of run " + *run + ", which published no dataset using it " +
                                 "(interrupted, failed or replaced)"});
    } else if (ParseTemporary(name, &target, &pid)) {
      if (target == Manifest::kFileName && !writer_elsewhere) {
        out.push_back({f.path, "temporary of an interrupted publication"});
      } else if (WriterLock::IsEntryName(target) && probe->IsGone({pid, probe->Self().host, 0})) {
        out.push_back({f.path, "temporary of an interrupted lock acquisition"});
      }
    }
  }
  return out;
}

Status CheckNoUnpublishedRun(io::FileSystem* fs, const std::string& dir,
                             const std::vector<io::FileInfo>& files) {
  const std::string remedy = ": rerun it, or `sluice clean " + dir + "` removes what it left";
  SLUICE_ASSIGN_OR_RETURN(std::optional<LockEntry> lock, WriterLock::ReadState(fs, dir));
  if (lock && !lock->released) {
    const bool gone = ThisProcess()->IsGone(lock->writer);
    return FailedPrecondition(
        dir + ": no " + Manifest::kFileName +
        ": this directory holds the unpublished output of a writer (" + lock->Describe() + "), " +
        (gone ? "which was interrupted" + remedy : std::string("which may still be running")));
  }
  for (const auto& f : files) {
    std::string_view name = io::Basename(f.path);
    auto run = RunIdOfFileName(name);
    if (run && Contains(name, ".tfrecord")) {
      return FailedPrecondition(dir + ": no " + Manifest::kFileName + ", but " + std::string(name) +
                                " is a shard of run " + *run +
                                ", which never published its dataset (interrupted or failed)" +
                                remedy);
    }
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------

Result<std::unique_ptr<DatasetPublisher>> DatasetPublisher::Begin(io::FileSystem* fs,
                                                                  const std::string& dir,
                                                                  const PublishOptions& options) {
  std::string run = options.run_id.empty() ? NewRunId() : options.run_id;
  if (!IsRunId(run))
    return InvalidArgument("run id '" + run + "': expected 12 lowercase hex digits");
  SLUICE_RETURN_IF_ERROR(fs->CreateDirs(dir));
  // Refused before touching anything: a published dataset without overwrite.
  const std::string manifest = io::JoinPath(dir, Manifest::kFileName);
  if (!options.overwrite && fs->Exists(manifest)) return AlreadyExists(ExistsMessage(manifest));
  std::unique_ptr<DatasetPublisher> p(new DatasetPublisher(fs, dir, std::move(run), options));
  SLUICE_RETURN_IF_ERROR(p->TakeLock());
  return p;
}

// The lock, then what it protects: the published dataset (checked again: it may have been
// published between the first check and the lock) and the reclaiming of dead runs' files.
Status DatasetPublisher::TakeLock() {
  WriterLockOptions lock;
  lock.run = run_;
  lock.command = options_.command;
  lock.probe = options_.probe;
  SLUICE_ASSIGN_OR_RETURN(lock_, WriterLock::Acquire(fs_, dir_, lock));
  const std::string manifest = io::JoinPath(dir_, Manifest::kFileName);
  if (fs_->Exists(manifest)) {
    if (!options_.overwrite) {
      done_ = true;
      (void)lock_->Release();
      return AlreadyExists(ExistsMessage(manifest));
    }
    // An unreadable manifest is replaced all the same: overwriting repairs it.
    auto old = Manifest::Load(fs_, dir_);
    if (old.ok()) replaced_ = std::move(*old);
  }
  auto leftovers =
      FindLeftovers(fs_, dir_, replaced_ ? &*replaced_ : nullptr, run_, options_.probe);
  if (!leftovers.ok()) {
    done_ = true;
    (void)lock_->Release();
    return leftovers.status();
  }
  DeleteAll(fs_, *leftovers);
  reclaimed_ = std::move(*leftovers);
  return Status::OK();
}

DatasetPublisher::~DatasetPublisher() { Abort(); }

std::string DatasetPublisher::RunFileName(std::string_view stem, std::string_view extension) const {
  return std::string(stem) + "-" + run_ + std::string(extension);
}

Result<std::string> DatasetPublisher::WriteFile(std::string_view stem, std::string_view extension,
                                                ByteView data) {
  if (done_) return FailedPrecondition("run " + run_ + " is over: cannot write more files");
  std::string name = RunFileName(stem, extension);
  SLUICE_RETURN_IF_ERROR(fs_->WriteAll(io::JoinPath(dir_, name), data));
  return name;
}

Status DatasetPublisher::Commit(Manifest manifest) {
  if (done_) return FailedPrecondition("run " + run_ + " is over: cannot commit");
  manifest.run = run_;
  const std::string path = io::JoinPath(dir_, Manifest::kFileName);
  // Replacing needs no condition: the lock keeps other writers out. A new dataset is put
  // only if absent, so that even a writer whose lock was broken cannot publish over it.
  Status s = replaced_ ? fs_->WriteAll(path, manifest.ToJson())
                       : fs_->PutIfAbsent(path, manifest.ToJson());
  if (!s.ok()) {
    if (s.code() == StatusCode::kAlreadyExists) {
      s = AlreadyExists(path + " was published by another writer while run " + run_ +
                        " was writing (was the writer lock broken?); this run's files are "
                        "deleted");
    }
    Abort();
    return s;
  }
  done_ = true;  // the commit point: from here on, failures only leave leftovers
  DeleteReplacedFiles(manifest);
  auto leftovers = FindLeftovers(fs_, dir_, &manifest, run_, options_.probe);
  if (leftovers.ok()) DeleteAll(fs_, *leftovers);
  (void)lock_->Release();
  return Status::OK();
}

void DatasetPublisher::DeleteReplacedFiles(const Manifest& published) {
  if (!replaced_) return;
  std::set<std::string> keep;
  for (const std::string& f : published.Files()) keep.insert(f);
  for (const std::string& f : replaced_->Files()) {
    if (keep.count(f) == 0) (void)fs_->Delete(io::JoinPath(dir_, f));
  }
}

void DatasetPublisher::Abort() {
  if (done_) return;
  done_ = true;
  auto files = fs_->List(dir_);
  if (files.ok()) {
    for (const auto& f : *files) {
      if (!f.is_directory && RunIdOfFileName(io::Basename(f.path)) == run_) {
        (void)fs_->Delete(f.path);
      }
    }
  }
  if (lock_) (void)lock_->Release();
}

}  // namespace sluice::format

// WriterLock: the put-if-absent lock log of a dataset directory (include/sluice/format/
// writer_lock.h has the protocol and its invariants).
#include "sluice/format/writer_lock.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sluice/base/utf8.h"

namespace sluice::format {
namespace {

using Json = nlohmann::ordered_json;

// A writer that loses a race re-reads the log and tries again; past this many attempts the
// directory is contended by a stream of writers and the call gives up.
constexpr int kAcquireAttempts = 8;

// Process `pid` as /proc/<pid>/stat tells it: its state (field 3; 0 when unknown) and its
// start time in clock ticks since boot (field 22; 0 when unknown).
struct ProcessStat {
  char state = 0;
  uint64_t start_ticks = 0;
};
ProcessStat ReadProcessStat(int64_t pid) {
  ProcessStat out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return out;
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3) out.state = field[0];
    if (i == 22) out.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  return out;
}
uint64_t ProcessStartTicks(int64_t pid) { return ReadProcessStat(pid).start_ticks; }

class RealProcessProbe final : public ProcessProbe {
 public:
  WriterIdentity Self() const override {
    WriterIdentity me;
    me.pid = ::getpid();
    char host[HOST_NAME_MAX + 1] = {};
    if (::gethostname(host, sizeof host - 1) == 0) me.host = host;
    me.start_ticks = ProcessStartTicks(me.pid);
    return me;
  }
  bool IsGone(const WriterIdentity& who) const override {
    if (who.pid <= 0 || who.host.empty() || who.host != Self().host) return false;
    if (::kill(static_cast<pid_t>(who.pid), 0) != 0 && errno == ESRCH) return true;
    const ProcessStat now = ReadProcessStat(who.pid);
    // A zombie passes kill(pid, 0) but writes nothing more: its parent has not reaped it yet
    // (ranks of a killed mpirun job are orphans, reaped whenever init gets to it).
    if (now.state == 'Z' || now.state == 'X') return true;
    return who.start_ticks != 0 && now.start_ticks != 0 && now.start_ticks != who.start_ticks;
  }
};

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Entry numbers present in `dir`, ascending.
Result<std::vector<uint64_t>> EntryNumbers(io::FileSystem* fs, const std::string& dir) {
  SLUICE_ASSIGN_OR_RETURN(auto files, fs->List(dir));
  std::vector<uint64_t> numbers;
  for (const auto& f : files) {
    uint64_t n = 0;
    if (!f.is_directory && WriterLock::IsEntryName(io::Basename(f.path), &n)) numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

Result<LockEntry> ReadEntry(io::FileSystem* fs, const std::string& dir, uint64_t number) {
  std::string path = WriterLock::EntryPath(dir, number);
  SLUICE_ASSIGN_OR_RETURN(std::string text, fs->ReadAll(path));
  SLUICE_ASSIGN_OR_RETURN(LockEntry entry, LockEntry::FromJson(text, path));
  entry.number = number;
  return entry;
}

// Deletes the entries numbered below `number` (best effort: invariant 3 allows it, and a
// left entry only costs a file).
void DeleteEntriesBelow(io::FileSystem* fs, const std::string& dir, uint64_t number) {
  auto numbers = EntryNumbers(fs, dir);
  if (!numbers.ok()) return;
  for (uint64_t n : *numbers) {
    if (n < number) (void)fs->Delete(WriterLock::EntryPath(dir, n));
  }
}

Status Held(const std::string& dir, const LockEntry& holder, bool foreign) {
  std::string advice = foreign ? "; if it is gone, `sluice clean --break-lock " + dir +
                                     "` takes the lock over (it runs on another host, so "
                                     "this one cannot tell)"
                               : "; wait for it to finish";
  return FailedPrecondition(dir + " is being written by another writer: " + holder.Describe() +
                            " (lock " + WriterLock::EntryPath(dir, holder.number) + ")" + advice);
}

}  // namespace

ProcessProbe* ThisProcess() {
  static RealProcessProbe* probe = new RealProcessProbe();
  return probe;
}

std::string LockEntry::ToJson() const {
  Json j;
  j["run"] = run;
  if (released) {
    j["released"] = true;
  } else {
    j["pid"] = writer.pid;
    j["host"] = writer.host;
    j["pid_start_ticks"] = writer.start_ticks;
    j["started"] = started;
    j["command"] = command;
  }
  return j.dump() + "\n";
}

Result<LockEntry> LockEntry::FromJson(std::string_view json, const std::string& source) {
  LockEntry e;
  try {
    Json j = Json::parse(json);
    e.run = j.at("run").get<std::string>();
    e.released = j.value("released", false);
    if (!e.released) {
      e.writer.pid = j.at("pid").get<int64_t>();
      e.writer.host = j.at("host").get<std::string>();
      e.writer.start_ticks = j.value("pid_start_ticks", uint64_t{0});
      e.started = j.value("started", std::string());
      e.command = j.value("command", std::string());
    }
  } catch (const Json::exception& ex) {
    return DataLoss(source + ": not a sluice lock entry (" + EscapeBytes(ex.what(), 300) + ")");
  }
  return e;
}

std::string LockEntry::Describe() const {
  std::string s = "run " + run;
  if (!command.empty()) s += " (" + command + ")";
  s += ", pid " + std::to_string(writer.pid) + " on host " + writer.host;
  if (!started.empty()) s += ", since " + started;
  return s;
}

std::string WriterLock::EntryPath(const std::string& dir, uint64_t number) {
  return io::JoinPath(dir, kFilePrefix + std::to_string(number));
}

bool WriterLock::IsEntryName(std::string_view name, uint64_t* number) {
  std::string_view prefix = kFilePrefix;
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
  std::string_view digits = name.substr(prefix.size());
  if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  if (number != nullptr) *number = std::strtoull(std::string(digits).c_str(), nullptr, 10);
  return true;
}

Result<std::optional<LockEntry>> WriterLock::ReadState(io::FileSystem* fs, const std::string& dir,
                                                       std::vector<uint64_t>* numbers) {
  // The highest entry can be superseded and deleted between the listing and the read:
  // then list again (bounded: each retry means the log moved on).
  for (int attempt = 0; attempt < kAcquireAttempts; ++attempt) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> present, EntryNumbers(fs, dir));
    if (numbers != nullptr) *numbers = present;
    if (present.empty()) return std::optional<LockEntry>();
    auto top = ReadEntry(fs, dir, present.back());
    if (top.ok()) return std::optional<LockEntry>(std::move(*top));
    if (top.status().code() != StatusCode::kNotFound) return top.status();
  }
  return FailedPrecondition(dir + ": the writer lock keeps changing; try again");
}

Result<std::unique_ptr<WriterLock>> WriterLock::Acquire(io::FileSystem* fs, const std::string& dir,
                                                        const WriterLockOptions& options) {
  ProcessProbe* probe = options.probe != nullptr ? options.probe : ThisProcess();
  LockEntry mine;
  mine.run = options.run;
  mine.writer = probe->Self();
  mine.started = UtcNow();
  mine.command = options.command;
  for (int attempt = 0; attempt < kAcquireAttempts; ++attempt) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<LockEntry> top, ReadState(fs, dir));
    std::optional<LockEntry> stale;
    if (top && !top->released) {
      const bool foreign = top->writer.host != mine.writer.host;
      if (!probe->IsGone(top->writer) && !(foreign && options.break_foreign)) {
        return Held(dir, *top, foreign);
      }
      stale = top;
    }
    mine.number = top ? top->number + 1 : 1;
    Status put = fs->PutIfAbsent(EntryPath(dir, mine.number), mine.ToJson());
    if (put.code() == StatusCode::kAlreadyExists) continue;  // another writer moved first
    SLUICE_RETURN_IF_ERROR(put);
    // Invariant 2: the entry counts only if nothing newer exists.
    SLUICE_ASSIGN_OR_RETURN(std::vector<uint64_t> now, EntryNumbers(fs, dir));
    if (!now.empty() && now.back() > mine.number) {
      (void)fs->Delete(EntryPath(dir, mine.number));
      continue;
    }
    DeleteEntriesBelow(fs, dir, mine.number);
    return std::unique_ptr<WriterLock>(new WriterLock(fs, dir, std::move(mine), std::move(stale)));
  }
  return FailedPrecondition(dir + ": could not take the writer lock after " +
                            std::to_string(kAcquireAttempts) +
                            " attempts: other writers keep taking it");
}

WriterLock::~WriterLock() { (void)Release(); }

Status WriterLock::Release() {
  if (released_) return *released_;
  LockEntry release;
  release.number = entry_.number + 1;
  release.released = true;
  release.run = entry_.run;
  Status s = fs_->PutIfAbsent(EntryPath(dir_, release.number), release.ToJson());
  if (s.code() == StatusCode::kAlreadyExists) {
    s = FailedPrecondition(EntryPath(dir_, entry_.number) +
                           ": the lock was taken over while this writer held it");
  }
  if (s.ok()) DeleteEntriesBelow(fs_, dir_, release.number);
  released_ = s;
  return s;
}

}  // namespace sluice::format

// vacuum: deletes the files under a table's root that no version within the retention
// references (Delta's VACUUM): files neither live in the latest version nor removed by a
// commit younger than the retention, and themselves older than it (so that a writer's shards
// that are not committed yet survive). Hidden paths (leading '_' or '.') and _delta_log are
// never touched, except the temporary files that crashed log writers leave in _delta_log.
#include <set>

#include "checkpoint.h"
#include "file_actions.h"
#include "log_path.h"
#include "log_reader.h"
#include "protocol_support.h"
#include "sluice/format/shard_index.h"
#include "sluice/io/relative_path.h"
#include "sluice/table/timestamp.h"
#include "table_internal.h"

namespace sluice::table {
namespace {

bool Hidden(std::string_view name) {
  return !name.empty() && (name[0] == '.' || (name[0] == '_' && name.find('=') == name.npos));
}

// Every file under `dir` (relative to `root`) that vacuum may consider. A directory that
// resolves outside the root (a symbolic link pointing out) is not the table's: never entered.
Status Walk(io::FileSystem* fs, const std::string& root, const std::string& relative_dir,
            std::vector<std::pair<std::string, io::FileInfo>>* out) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<io::FileInfo> entries,
                          fs->List(relative_dir.empty() ? root : io::JoinPath(root, relative_dir)));
  for (io::FileInfo& e : entries) {
    std::string name(io::Basename(e.path));
    if (Hidden(name)) continue;
    std::string relative = relative_dir.empty() ? name : relative_dir + "/" + name;
    if (e.is_directory) {
      if (!io::CheckInsideRoot(fs, root, relative).ok()) continue;
      SLUICE_RETURN_IF_ERROR(Walk(fs, root, relative, out));
    } else {
      out->emplace_back(std::move(relative), std::move(e));
    }
  }
  return Status::OK();
}

// The relative on-disk paths of a file and of its index.
void KeepFile(const std::string& spelled, const std::map<std::string, std::string>& tags,
              std::set<std::string>* keep) {
  Result<std::string> relative = DecodeLogPath(spelled);
  if (!relative.ok()) return;  // never deleted: it is not under the root
  keep->insert(*relative);
  keep->insert(format::ShardIndex::IndexPathFor(*relative));
  auto index = tags.find(std::string(kIndexTag));
  if (index != tags.end()) {
    if (Result<std::string> i = DecodeLogPath(index->second); i.ok()) keep->insert(*i);
  }
}

std::string Hours(int64_t ms) { return std::to_string(ms / 3600000.0).substr(0, 6) + " h"; }

}  // namespace

Result<VacuumResult> Table::Vacuum(const VacuumOptions& options) {
  SLUICE_RETURN_IF_ERROR(Refresh());
  const TableState& state = *state_;
  SLUICE_RETURN_IF_ERROR(CheckCanWrite(*state.protocol, *state.metadata, root_));
  const int64_t table_retention = DeletedFileRetentionMs(*state.metadata);
  int64_t retention = table_retention;
  if (options.retention_hours.has_value()) {
    if (*options.retention_hours < 0) return InvalidArgument("vacuum: negative retention");
    retention = static_cast<int64_t>(*options.retention_hours * 3600.0 * 1000.0);
  }
  if (options.enforce_retention_duration && retention < table_retention) {
    return FailedPrecondition(
        "vacuum " + root_ + ": a retention of " + Hours(retention) + " is shorter than the " +
        "table's " + Hours(table_retention) + " (delta.deletedFileRetentionDuration): readers " +
        "of older versions and writers that have not committed yet could lose files. Pass " +
        "enforce_retention_duration=false (CLI: --no-enforce-retention) if you are sure");
  }
  const int64_t now = options.clock ? options.clock() : NowMs();
  const int64_t cutoff = now - retention;
  std::set<std::string> keep;
  for (const auto& [path, add] : state.files) {
    // A live file that resolves outside the root is refused here as by readers.
    SLUICE_RETURN_IF_ERROR(FilePath(ToDataFile(add)).status().WithContext("vacuum"));
    KeepFile(path, add.tags, &keep);
  }
  for (const auto& [path, remove] : state.tombstones) {
    if (remove.deletion_timestamp.value_or(0) >= cutoff) KeepFile(path, remove.tags, &keep);
  }
  std::vector<std::pair<std::string, io::FileInfo>> files;
  SLUICE_RETURN_IF_ERROR(Walk(fs_, root_, "", &files));
  // Temporary files of log writers that crashed (never a commit or checkpoint).
  SLUICE_ASSIGN_OR_RETURN(std::vector<io::FileInfo> log, fs_->List(LogDir(root_)));
  for (io::FileInfo& e : log) {
    std::string name(io::Basename(e.path));
    if (!e.is_directory && ParseLogPath(name).kind == LogFileKind::kOther &&
        name.find(".tmp-") != std::string::npos) {
      files.emplace_back(std::string(kLogDirName) + "/" + name, std::move(e));
    }
  }
  VacuumResult result;
  for (const auto& [relative, info] : files) {
    // A file of unknown age (a store without modification times) is never deleted.
    if (keep.count(relative) || info.modification_time_ms <= 0 ||
        info.modification_time_ms >= cutoff) {
      continue;
    }
    if (!options.dry_run) {
      Status s = fs_->Delete(io::JoinPath(root_, relative));
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s.WithContext("vacuum");
    }
    result.files.push_back(relative);
    result.bytes += info.size;
  }
  return result;
}

}  // namespace sluice::table

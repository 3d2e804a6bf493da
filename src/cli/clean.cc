// `sluice clean DIR`: deletes what interrupted writers left in a dataset directory (their
// unpublished files, temporaries and lock), under the directory's lock, so it never touches
// a running writer's files or the published dataset (docs/cli.md). A table (or a directory
// inside one) is refused, pointing at `sluice table vacuum`.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/dist_job.h"
#include "sluice/format/dataset_publisher.h"
#include "sluice/table/table.h"

namespace sluice::cli {
namespace {

struct CleanOptions {
  std::string dir;
  bool break_lock = false;  // Default: a lock held on another host is respected
  bool dry_run = false;
};

Status Clean(const CleanOptions& opts, const Location& where) {
  std::optional<format::Manifest> published;
  if (where.fs->Exists(io::JoinPath(where.path, format::Manifest::kFileName))) {
    SLUICE_ASSIGN_OR_RETURN(published, format::Manifest::Load(where.fs, where.path));
  }
  format::WriterLockOptions lock_options;
  lock_options.run = format::NewRunId();
  lock_options.command = "sluice clean";
  lock_options.break_foreign = opts.break_lock;
  SLUICE_ASSIGN_OR_RETURN(auto lock,
                          format::WriterLock::Acquire(where.fs, where.path, lock_options));
  if (lock->taken_over()) {
    fmt::print("took over the lock of {}\n", lock->taken_over()->Describe());
  }
  SLUICE_ASSIGN_OR_RETURN(
      auto leftovers, format::FindLeftovers(where.fs, where.path, published ? &*published : nullptr,
                                            lock_options.run));
  for (const auto& l : leftovers) {
    if (!opts.dry_run) SLUICE_RETURN_IF_ERROR(where.fs->Delete(l.path));
    fmt::print("{} {}: {}\n", opts.dry_run ? "would remove" : "removed", l.path, l.reason);
  }
  // Jobs' resumable state that no live run owns (dist/job_record.h).
  SLUICE_ASSIGN_OR_RETURN(auto jobs, ReclaimDeadJobRecords(where, opts.dry_run));
  for (const auto& j : jobs) {
    fmt::print("{} {}: {}\n", opts.dry_run ? "would remove" : "removed", j.path, j.reason);
  }
  fmt::print("{} file(s) {}; {}\n", leftovers.size(), opts.dry_run ? "to remove" : "removed",
             published ? "the published dataset is untouched" : "no dataset is published here");
  return lock->Release();
}

// The table `dir` is part of (itself or a directory above it, e.g. a partition), if any.
std::optional<std::string> EnclosingTable(io::FileSystem* fs, std::string dir) {
  while (!dir.empty()) {
    if (table::Table::IsTable(fs, dir)) return dir;
    std::string parent(io::Dirname(dir));
    if (parent == dir) break;
    dir = std::move(parent);
  }
  return std::nullopt;
}

int RunClean(const CleanOptions& opts) {
  auto where = Locate(opts.dir);
  if (!where.ok()) return ReportError(where.status());
  auto info = where->fs->Stat(where->path);
  if (!info.ok()) return ReportError(info.status());
  if (!info->is_directory) return ReportError(InvalidArgument(opts.dir + " is not a directory"));
  // A table's files are named by runs that publish no dataset.json: clean would take every
  // one of them for a leftover. What no version needs is vacuum's to decide.
  if (auto table = EnclosingTable(where->fs, where->path)) {
    return ReportError(FailedPrecondition(
        opts.dir + (*table == where->path ? " is a table" : " is inside the table " + *table) +
        " (it has a _delta_log directory): clean would remove the data files its versions " +
        "reference; `sluice table vacuum " + *table +
        "` removes the files no version within the retention references"));
  }
  Status s = Clean(opts, *where);
  return s.ok() ? kExitOk : ReportError(s);
}

}  // namespace

void AddCleanCommand(CLI::App* cmd, int* exit_code) {
  auto opts = std::make_shared<CleanOptions>();
  cmd->footer(
      "Removes files named by a run that published no dataset using them, writers' "
      "temporaries, and the lock of a writer that is gone. The published dataset and a "
      "running writer's files are never touched (a running writer makes clean wait its turn: "
      "it exits 1 naming the writer). A table, or a directory inside one, is refused: "
      "`sluice table vacuum` removes what no version of a table needs.");
  cmd->add_option("DIR", opts->dir, "dataset directory")->required();
  cmd->add_flag("--break-lock", opts->break_lock,
                "also take over a lock held by a writer on another host (only if it is gone)");
  cmd->add_flag("--dry-run,-n", opts->dry_run, "only list what would be removed");
  cmd->callback([opts, exit_code] { *exit_code = RunClean(*opts); });
}

}  // namespace sluice::cli

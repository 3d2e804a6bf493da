// The plans of append, overwrite, delete and restore: which adds and removes a commit holds,
// and what it read (for conflict detection). Operation names and parameters are Spark's, so
// `DESCRIBE HISTORY` of other tools reads them as their own.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "file_actions.h"
#include "log_reader.h"
#include "protocol_support.h"
#include "schema.h"
#include "sluice/table/timestamp.h"
#include "table_internal.h"

namespace sluice::table {
namespace {

// Every file must carry exactly the table's partition columns.
Status CheckPartitions(const std::vector<DataFile>& files, const std::vector<std::string>& columns,
                       const std::string& root) {
  for (const DataFile& f : files) {
    bool same = f.partition_values.size() == columns.size();
    for (const std::string& c : columns) same = same && f.partition_values.count(c) == 1;
    if (!same) {
      return InvalidArgument("write to " + root + ": file " + f.path +
                             " has partition values for " +
                             std::to_string(f.partition_values.size()) +
                             " columns; the table is partitioned by " + JsonStringList(columns));
    }
    if (f.path.empty()) return InvalidArgument("write to " + root + ": a file has no path");
    SLUICE_RETURN_IF_ERROR(DecodeLogPath(f.path).status());
  }
  return Status::OK();
}

Status CheckFeatures(const Metadata& metadata, const CreateOptions& create,
                     const std::string& root) {
  auto existing = FeaturesOf(metadata);
  if (create.features.empty() || existing.empty() ||
      FeaturesJson(existing) == FeaturesJson(create.features)) {
    return Status::OK();
  }
  return FailedPrecondition("write to " + root + ": the table's feature schema is " +
                            FeaturesJson(existing) + ", this write's is " +
                            FeaturesJson(create.features));
}

Status RefuseIfAppendOnly(const TableState& state, const std::string& root, const char* what) {
  if (state.version >= 0 && IsAppendOnly(*state.metadata)) {
    return FailedPrecondition(std::string(what) + " on " + root +
                              ": the table is append-only (delta.appendOnly = true)");
  }
  return Status::OK();
}

// Adds for `files` and the partition columns they are checked against.
Status AddFiles(const TableState& state, const std::vector<DataFile>& files,
                const CommitOptions& options, const std::string& root, Transaction* txn) {
  const std::vector<std::string>& columns =
      state.version >= 0 ? state.metadata->partition_columns : options.create.partition_columns;
  SLUICE_RETURN_IF_ERROR(CheckPartitions(files, columns, root));
  if (state.version >= 0)
    SLUICE_RETURN_IF_ERROR(CheckFeatures(*state.metadata, options.create, root));
  const int64_t now = options.clock ? options.clock() : NowMs();
  int64_t records = 0, bytes = 0;
  for (const DataFile& f : files) {
    txn->actions.push_back(ToAdd(f, now));
    records += std::max<int64_t>(0, f.records);
    bytes += f.size;
  }
  txn->info.operation = "WRITE";
  txn->info.operation_parameters["partitionBy"] = JsonStringList(columns);
  txn->info.operation_metrics["numFiles"] = std::to_string(files.size());
  txn->info.operation_metrics["numOutputRows"] = std::to_string(records);
  txn->info.operation_metrics["numOutputBytes"] = std::to_string(bytes);
  return Status::OK();
}

// Removes every live file matching `where`; returns how many.
size_t RemoveMatching(const TableState& state, const FilePredicate& where, Transaction* txn) {
  size_t n = 0;
  for (const auto& [path, add] : state.files) {
    if (!where.Matches(add.partition_values)) continue;
    txn->actions.push_back(ToRemove(add, /*data_change=*/true));
    ++n;
  }
  return n;
}

}  // namespace

std::string JsonStringList(const std::vector<std::string>& values) {
  return nlohmann::json(values).dump();
}

PlanFn AppendPlan(std::vector<DataFile> files, const CommitOptions& options,
                  const std::string& root) {
  return [files = std::move(files), options, root](const TableState& state,
                                                   Transaction* txn) -> Status {
    SLUICE_RETURN_IF_ERROR(AddFiles(state, files, options, root, txn));
    txn->info.operation_parameters["mode"] = "Append";  // as Spark and delta-rs write it
    txn->info.is_blind_append = true;
    return Status::OK();
  };
}

Result<CommitResult> Table::Overwrite(std::vector<DataFile> files, const FilePredicate& where,
                                      const CommitOptions& options) {
  auto plan = [&](const TableState& state, Transaction* txn) -> Status {
    SLUICE_RETURN_IF_ERROR(RefuseIfAppendOnly(state, root_, "overwrite"));
    SLUICE_RETURN_IF_ERROR(where.Validate(state.metadata->partition_columns));
    size_t removed = RemoveMatching(state, where, txn);
    SLUICE_RETURN_IF_ERROR(AddFiles(state, files, options, root_, txn));
    txn->info.operation_parameters["mode"] = "Overwrite";
    if (!where.matches_all()) txn->info.operation_parameters["predicate"] = where.ToString();
    txn->info.operation_metrics["numRemovedFiles"] = std::to_string(removed);
    txn->info.is_blind_append = false;
    txn->conflicting_appends = where;
    return Status::OK();
  };
  return CommitPlanned(options, plan);
}

Result<CommitResult> Table::Delete(const FilePredicate& where, const CommitOptions& options) {
  auto plan = [&](const TableState& state, Transaction* txn) -> Status {
    SLUICE_RETURN_IF_ERROR(RefuseIfAppendOnly(state, root_, "delete"));
    SLUICE_RETURN_IF_ERROR(where.Validate(state.metadata->partition_columns));
    size_t removed = RemoveMatching(state, where, txn);
    if (removed == 0) return Status::OK();  // nothing matches: no commit
    txn->info.operation = "DELETE";
    txn->info.operation_parameters["predicate"] = JsonStringList({where.ToString()});
    txn->info.operation_metrics["numRemovedFiles"] = std::to_string(removed);
    txn->info.is_blind_append = false;
    txn->conflicting_appends = where;
    return Status::OK();
  };
  return CommitPlanned(options, plan);
}

Result<CommitResult> Table::Restore(int64_t version, const CommitOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(TableState target, LoadTableState(store_.get(), root_, version));
  auto plan = [&](const TableState& state, Transaction* txn) -> Status {
    SLUICE_RETURN_IF_ERROR(RefuseIfAppendOnly(state, root_, "restore"));
    if (target.metadata->partition_columns != state.metadata->partition_columns) {
      return FailedPrecondition("restore " + root_ + " to version " + std::to_string(version) +
                                ": its partition columns differ from the latest version's");
    }
    std::vector<std::string> missing;
    size_t added = 0, removed = 0;
    for (const auto& [path, add] : target.files) {
      if (state.files.count(path)) continue;
      Result<std::string> relative = DecodeLogPath(path);
      SLUICE_RETURN_IF_ERROR(relative.status());
      if (!fs_->Exists(io::JoinPath(root_, *relative))) missing.push_back(path);
      AddFile a = add;
      a.data_change = true;
      txn->actions.push_back(std::move(a));
      ++added;
    }
    if (!missing.empty()) {
      return FailedPrecondition("restore " + root_ + " to version " + std::to_string(version) +
                                ": " + std::to_string(missing.size()) +
                                " of its files no longer exist (vacuumed?), e.g. " + missing[0]);
    }
    for (const auto& [path, add] : state.files) {
      txn->read_files.insert(path);
      if (target.files.count(path)) continue;
      txn->actions.push_back(ToRemove(add, /*data_change=*/true));
      ++removed;
    }
    txn->info.operation = "RESTORE";
    txn->info.operation_parameters["version"] = std::to_string(version);
    txn->info.operation_metrics["numRestoredFiles"] = std::to_string(added);
    txn->info.operation_metrics["numRemovedFiles"] = std::to_string(removed);
    txn->info.is_blind_append = false;
    txn->conflicting_appends = FilePredicate{};
    return Status::OK();
  };
  return CommitPlanned(options, plan);
}

}  // namespace sluice::table

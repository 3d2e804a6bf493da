// `sluice table history|files|optimize|vacuum|restore|delete|append|checkpoint PATH`: the
// table operations of docs/table.md from the command line, each a thin call into
// sluice::table, printing text or, with --json, one JSON document.
#include "sluice/table/table.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/dist_job.h"
#include "cli/table_summary.h"
#include "sluice/base/bytes.h"
#include "sluice/table/timestamp.h"

namespace sluice::cli {
namespace {

using Json = nlohmann::ordered_json;
using table::Table;

struct TableOptions {
  std::string path;
  std::optional<int64_t> version;
  std::string timestamp;  // ISO 8601 or ms
  bool json = false;
  size_t limit = 0;  // history: 0 = all
  std::string target_size = "100MB";
  std::string where;
  std::optional<double> retention_hours;
  bool dry_run = true;
  bool enforce_retention = true;
  std::vector<std::string> shards;
  std::vector<std::string> partition;  // k=v
  std::string txn;                     // app:version
};

Result<Table> OpenTable(const TableOptions& o, bool at_version = true) {
  SLUICE_ASSIGN_OR_RETURN(Location where, Locate(o.path));
  table::OpenOptions open;
  if (at_version) {
    open.version = o.version;
    if (!o.timestamp.empty()) {
      SLUICE_ASSIGN_OR_RETURN(open.timestamp_ms, table::ParseTimestamp(o.timestamp));
    }
  }
  return Table::Open(where.fs, where.path, open);
}

Json PartitionsJson(const table::PartitionValues& values) {
  Json j = Json::object();
  for (const auto& [k, v] : values) j[k] = v ? Json(*v) : Json(nullptr);
  return j;
}

std::string PartitionsText(const table::PartitionValues& values) {
  std::string out;
  for (const auto& [k, v] : values) out += (out.empty() ? "" : ",") + k + "=" + v.value_or("null");
  return out;
}

Json CommitJson(const table::CommitResult& r) {
  Json j = {{"version", r.version}, {"attempts", r.attempts}, {"duplicate", r.duplicate}};
  if (r.checkpoint_version) j["checkpoint_version"] = *r.checkpoint_version;
  if (!r.checkpoint_error.empty()) j["checkpoint_error"] = r.checkpoint_error;
  return j;
}

int PrintCommit(const TableOptions& o, const std::string& what, const table::CommitResult& r) {
  if (r.checkpoint_error.size()) Warn("checkpoint not written: " + r.checkpoint_error);
  if (o.json) {
    fmt::print("{}\n", CommitJson(r).dump());
  } else if (r.attempts == 0) {
    fmt::print("{}: nothing to commit (version {})\n", what, r.version);
  } else {
    fmt::print("{}: committed version {}\n", what, r.version);
  }
  return kExitOk;
}

int RunHistory(const TableOptions& o) {
  auto t = OpenTable(o);
  if (!t.ok()) return ReportError(t.status());
  auto history = t->History(o.limit > 0 ? std::optional<size_t>(o.limit) : std::nullopt);
  if (!history.ok()) return ReportError(history.status());
  if (o.json) {
    Json out = Json::array();
    for (const table::HistoryEntry& e : *history) {
      out.push_back({{"version", e.version},
                     {"timestamp", e.timestamp_ms},
                     {"operation", e.operation},
                     {"operationParameters", e.operation_parameters},
                     {"operationMetrics", e.operation_metrics}});
    }
    fmt::print("{}\n", out.dump());
    return kExitOk;
  }
  fmt::print("{:>8}  {:<24}  {:<16}  {}\n", "version", "timestamp", "operation", "parameters");
  for (const table::HistoryEntry& e : *history) {
    std::string params;
    for (const auto& [k, v] : e.operation_parameters)
      params += (params.empty() ? "" : " ") + k + "=" + v;
    fmt::print("{:>8}  {:<24}  {:<16}  {}\n", e.version, table::FormatTimestamp(e.timestamp_ms),
               e.operation, params);
  }
  return kExitOk;
}

int RunFiles(const TableOptions& o) {
  auto t = OpenTable(o);
  if (!t.ok()) return ReportError(t.status());
  std::vector<table::DataFile> files = t->files();
  if (o.json) {
    Json out = Json::array();
    for (const table::DataFile& f : files) {
      out.push_back({{"path", f.path},
                     {"size", f.size},
                     {"records", f.records >= 0 ? Json(f.records) : Json(nullptr)},
                     {"partition_values", PartitionsJson(f.partition_values)}});
    }
    fmt::print("{}\n", Json{{"version", t->version()}, {"files", out}}.dump());
    return kExitOk;
  }
  // A count the log does not state (an add without stats) prints as "?".
  auto count = [](int64_t n) { return n >= 0 ? std::to_string(n) : std::string("?"); };
  fmt::print("{} version {}: {} file(s), {} records\n", t->root(), t->version(), files.size(),
             count(t->num_records()));
  for (const table::DataFile& f : files) {
    fmt::print("  {}  {:>10}  {:>12}  {}\n", f.path, count(f.records), f.size,
               PartitionsText(f.partition_values));
  }
  return kExitOk;
}

int RunOptimize(const TableOptions& o) {
  table::OptimizeOptions opt;
  if (!ParseByteSize(o.target_size, &opt.target_file_bytes) || opt.target_file_bytes == 0) {
    return ReportError(InvalidArgument("--target-size: not a size: " + o.target_size));
  }
  auto where = table::FilePredicate::Parse(o.where);
  if (!where.ok()) return ReportError(where.status());
  opt.where = *where;
  auto t = OpenTable(o, false);
  if (!t.ok()) return ReportError(t.status());
  auto r = t->Optimize(opt);
  if (!r.ok()) return ReportError(r.status());
  if (o.json) {
    Json j = CommitJson(r->commit);
    j["filesRemoved"] = r->removed;
    j["filesAdded"] = r->added;
    j["numRecords"] = r->records;
    fmt::print("{}\n", j.dump());
  } else if (r->commit.version < 0) {
    fmt::print("optimize: nothing to compact\n");
  } else {
    fmt::print("optimize: {} file(s) compacted into {} ({} records), version {}\n",
               r->removed.size(), r->added.size(), r->records, r->commit.version);
  }
  return kExitOk;
}

int RunVacuum(const TableOptions& o) {
  auto t = OpenTable(o, false);
  if (!t.ok()) return ReportError(t.status());
  table::VacuumOptions v;
  v.retention_hours = o.retention_hours;
  v.dry_run = o.dry_run;
  v.enforce_retention_duration = o.enforce_retention;
  auto r = t->Vacuum(v);
  if (!r.ok()) return ReportError(r.status());
  // Jobs' resumable state that no live run owns (dist/job_record.h).
  auto where = Locate(o.path);
  if (!where.ok()) return ReportError(where.status());
  auto jobs = ReclaimDeadJobRecords(*where, o.dry_run);
  if (!jobs.ok()) return ReportError(jobs.status());
  for (const auto& j : *jobs) {
    fmt::print(stderr, "vacuum: {} {}: {}\n", o.dry_run ? "would remove" : "removed", j.path,
               j.reason);
  }
  if (o.json) {
    fmt::print("{}\n",
               Json{{"dry_run", o.dry_run}, {"files", r->files}, {"bytes", r->bytes}}.dump());
    return kExitOk;
  }
  for (const std::string& f : r->files) fmt::print("{}\n", f);
  fmt::print(stderr, "vacuum: {} {} file(s), {}{}\n", o.dry_run ? "would delete" : "deleted",
             r->files.size(), FormatByteSize(r->bytes),
             o.dry_run ? " (dry run: pass --no-dry-run to delete)" : "");
  return kExitOk;
}

int RunRestore(const TableOptions& o) {
  auto target = OpenTable(o);  // the version or timestamp to restore
  if (!target.ok()) return ReportError(target.status());
  auto t = OpenTable(o, false);
  if (!t.ok()) return ReportError(t.status());
  auto r = t->Restore(target->version());
  if (!r.ok()) return ReportError(r.status());
  return PrintCommit(o, "restore to version " + std::to_string(target->version()), *r);
}

int RunDelete(const TableOptions& o) {
  auto where = table::FilePredicate::Parse(o.where);
  if (!where.ok()) return ReportError(where.status());
  auto t = OpenTable(o, false);
  if (!t.ok()) return ReportError(t.status());
  auto r = t->Delete(*where);
  if (!r.ok()) return ReportError(r.status());
  return PrintCommit(o, "delete", *r);
}

int RunAppend(const TableOptions& o) {
  auto where = Locate(o.path);
  if (!where.ok()) return ReportError(where.status());
  table::PartitionValues partition;
  for (const std::string& kv : o.partition) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos)
      return ReportError(InvalidArgument("--partition " + kv + ": expected K=V"));
    partition[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  table::CommitOptions c;
  for (const auto& [k, _] : partition) c.create.partition_columns.push_back(k);
  if (!o.txn.empty()) {
    size_t colon = o.txn.rfind(':');
    if (colon == std::string::npos)
      return ReportError(InvalidArgument("--txn: expected APP:VERSION"));
    c.txn = table::TxnId{o.txn.substr(0, colon), std::stoll(o.txn.substr(colon + 1))};
  }
  std::vector<table::DataFile> files;
  for (const std::string& shard : o.shards) {
    auto f = table::DescribeShard(where->fs, where->path, shard, partition);
    if (!f.ok()) return ReportError(f.status());
    files.push_back(std::move(*f));
  }
  auto r = Table::Append(where->fs, where->path, std::move(files), c);
  if (!r.ok()) return ReportError(r.status());
  return PrintCommit(o, r->duplicate ? "append (already committed)" : "append", *r);
}

int RunCheckpoint(const TableOptions& o) {
  auto t = OpenTable(o, false);
  if (!t.ok()) return ReportError(t.status());
  auto v = t->Checkpoint();
  if (!v.ok()) return ReportError(v.status());
  if (o.json) {
    fmt::print("{}\n", Json{{"checkpoint_version", *v}}.dump());
  } else {
    fmt::print("checkpoint: version {}\n", *v);
  }
  return kExitOk;
}

CLI::App* AddTableSubcommand(CLI::App* parent, const char* name, const char* help,
                             std::shared_ptr<TableOptions> o, int (*run)(const TableOptions&),
                             int* exit_code) {
  CLI::App* cmd = parent->add_subcommand(name, help);
  cmd->add_option("PATH", o->path, "the table's directory or URI")->required();
  cmd->add_flag("--json", o->json, "print one JSON document");
  cmd->callback([o, run, exit_code] { *exit_code = run(*o); });
  return cmd;
}

void AddVersionOptions(CLI::App* cmd, TableOptions* o, const char* what) {
  cmd->add_option("--version", o->version, std::string("the version ") + what);
  cmd->add_option("--timestamp", o->timestamp,
                  std::string("the latest version committed at or before this time (ISO 8601, "
                              "UTC unless an offset is given, or ms since the epoch) ") +
                      what);
}

}  // namespace

void PrintTableSummary(const table::Table& t) {
  const table::Protocol& p = t.protocol();
  std::string columns;
  for (const std::string& c : t.metadata().partition_columns)
    columns += (columns.empty() ? "" : ", ") + c;
  fmt::print("table: version {}, committed {}; protocol reader {} / writer {}{}; {}\n", t.version(),
             table::FormatTimestamp(t.timestamp_ms()), p.min_reader_version, p.min_writer_version,
             p.reader_features && !p.reader_features->empty() ? " (+ features)" : "",
             columns.empty() ? "not partitioned" : "partitioned by " + columns);
}

void AddTableCommand(CLI::App* t, int* exit_code) {
  t->require_subcommand(1);
  t->footer(
      "A table is a directory of shards plus _delta_log/ (the Delta Lake log); see "
      "docs/table.md. Exit codes: 0 done, 1 error (a commit conflict included).");
  auto o = std::make_shared<TableOptions>();
  CLI::App* history =
      AddTableSubcommand(t, "history", "Commits, newest first", o, RunHistory, exit_code);
  history->add_option("--limit", o->limit, "only the newest N commits");
  AddVersionOptions(history, o.get(), "to start from (default: the latest)");
  AddVersionOptions(
      AddTableSubcommand(t, "files", "The data files of a version", o, RunFiles, exit_code),
      o.get(), "to list (default: the latest)");
  CLI::App* optimize = AddTableSubcommand(t, "optimize", "Compact small shards (one commit)", o,
                                          RunOptimize, exit_code);
  optimize->add_option("--target-size", o->target_size, "size of the compacted shards")
      ->capture_default_str();
  optimize->add_option("--where", o->where, "only partitions matching this predicate");
  CLI::App* vacuum = AddTableSubcommand(
      t, "vacuum", "Delete files no version within the retention references (dry run by default)",
      o, RunVacuum, exit_code);
  vacuum->add_option("--retention-hours", o->retention_hours,
                     "keep files unreferenced for less than this (default: the table's, 168)");
  vacuum->add_flag("--dry-run,!--no-dry-run", o->dry_run,
                   "only list what would be deleted (default; --no-dry-run deletes)");
  vacuum->add_flag("--enforce-retention,!--no-enforce-retention", o->enforce_retention,
                   "refuse a retention below the table's (default)");
  CLI::App* restore = AddTableSubcommand(t, "restore",
                                         "Commit a version holding the files of an "
                                         "earlier one",
                                         o, RunRestore, exit_code);
  AddVersionOptions(restore, o.get(), "to restore");
  restore->callback([o, exit_code] {
    *exit_code = !o->version && o->timestamp.empty()
                     ? ReportError(InvalidArgument("restore: give --version or --timestamp"))
                     : RunRestore(*o);
  });
  CLI::App* del = AddTableSubcommand(t, "delete",
                                     "Remove the files matching a predicate on "
                                     "partition values",
                                     o, RunDelete, exit_code);
  del->add_option("--where", o->where, "e.g. \"source = 'crawl-3'\"")->required();
  CLI::App* append = AddTableSubcommand(t, "append",
                                        "Commit shards already under the table "
                                        "root (creates the table)",
                                        o, RunAppend, exit_code);
  append->add_option("SHARD", o->shards, "shard paths relative to the root")->required();
  append->add_option("--partition", o->partition, "K=V partition value of these shards");
  append->add_option("--txn", o->txn, "APP:VERSION: commit nothing if already committed");
  AddTableSubcommand(t, "checkpoint", "Write a checkpoint of the latest version now", o,
                     RunCheckpoint, exit_code);
}

}  // namespace sluice::cli

// Table: a versioned dataset on the Delta Lake transaction-log protocol (docs/table.md).
// A table is a directory (local, s3://, ...) of sluice shards plus `_delta_log/`, whose
// numbered JSON commits say which shards make up each version. Opening a table fixes one
// version (a snapshot): its files, schema and history never change for that object. Writes
// commit optimistically (put-if-absent of the next version); each write is one commit, so
// readers see all of it or none.
//
//   auto t = table::Table::Open("data/crawl");                 // latest version
//   auto v12 = table::Table::Open("data/crawl", {.version = 12});
//   for (const table::DataFile& f : v12->files()) ...          // paths, sizes, record counts
//   t->Delete(*table::FilePredicate::Parse("source = 'crawl-3'"));
//   t->Vacuum({.dry_run = false});
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/format/manifest.h"
#include "sluice/io/file_system.h"
#include "sluice/table/actions.h"
#include "sluice/table/log_store.h"
#include "sluice/table/predicate.h"

namespace sluice::table {

struct TableState;
struct Transaction;

// One data file (a shard) of a table, as its `add` action describes it.
struct DataFile {
  // Relative to the table root, as the log spells it (a URI path: "source=a%20b/part-1.zst").
  std::string path;
  int64_t size = 0;      // bytes
  int64_t records = -1;  // stats.numRecords; -1 when the log does not say
  PartitionValues partition_values;
  // sluice's tags: "sluice.index" (the shard's index file, relative to the root as spelled).
  std::map<std::string, std::string> tags;
  int64_t modification_time_ms = 0;
};

// An application's progress marker for idempotent retries (Delta's `txn`): a commit carrying
// (app_id, version) is skipped when the table already holds that app_id at version or later.
struct TxnId {
  std::string app_id;
  int64_t version = 0;
};

// What a table is created with (the first write to an absent table creates it).
struct CreateOptions {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::vector<std::string> partition_columns;             // Default: none
  std::map<std::string, format::FeatureSchema> features;  // the records' feature schema
  std::map<std::string, std::string> configuration;       // table properties (delta.*)
};

struct CommitOptions {
  std::optional<TxnId> txn;  // Default: none (every call commits)
  CreateOptions create;      // used only when the write creates the table
  // Attempts before giving up when other writers keep committing first.
  int max_attempts = 1000;  // Default: 1000
  // Retries of a storage error worth retrying (IoError, ResourceExhausted), with backoff
  // (10 ms doubling, jittered); other errors end the commit at once.
  int max_storage_retries = 4;  // Default: 4
  // Checkpoint every N commits when the table sets no delta.checkpointInterval; 0 = never.
  int64_t checkpoint_interval = 100;  // Default: 100 (as delta-rs)
  // Wall clock in ms since the epoch. Default: the system clock (tests inject one).
  std::function<int64_t()> clock;
};

struct CommitResult {
  int64_t version = -1;    // the version committed (or, for a duplicate txn, the current one)
  int attempts = 0;        // 1 when no other writer interfered
  bool duplicate = false;  // the txn was already committed: nothing was written
  // A checkpoint written after the commit (every checkpoint interval), and why one that was
  // due failed (the commit stands; readers replay a few more commits).
  std::optional<int64_t> checkpoint_version;
  std::string checkpoint_error;
};

struct OpenOptions {
  std::optional<int64_t> version;       // Default: the latest at open
  std::optional<int64_t> timestamp_ms;  // the latest version committed at or before it
  // Where the log is read and committed. Default: NewFileSystemLogStore(fs). A store with
  // ranged listings, or a fault-injecting wrapper in tests.
  std::shared_ptr<LogStore> log_store;
};

struct HistoryEntry {
  int64_t version = 0;
  int64_t timestamp_ms = 0;  // monotonized commit time (docs/table.md)
  std::string operation;     // "WRITE", "DELETE", "OPTIMIZE", "RESTORE", "CREATE TABLE", ...
  std::map<std::string, std::string> operation_parameters;
  std::map<std::string, std::string> operation_metrics;
  std::string commit_info_json;  // the whole commitInfo; empty when the commit has none
};

struct OptimizeOptions {
  // Files smaller than this are compacted into files of about this size. Default: 100 MB.
  uint64_t target_file_bytes = 100'000'000;
  FilePredicate where;  // Default: every partition
  CommitOptions commit;
};

struct OptimizeResult {
  CommitResult commit;               // version -1 when there was nothing to compact
  std::vector<std::string> removed;  // paths as spelled
  std::vector<std::string> added;
  int64_t records = 0;  // records rewritten
};

struct VacuumOptions {
  // Files no longer referenced are deleted once unreferenced for this long. Default: the
  // table's delta.deletedFileRetentionDuration, else 168 h (7 days).
  std::optional<double> retention_hours;
  bool dry_run = true;  // Default: true (only list what would be deleted)
  // Refuse a retention shorter than the default (Delta's retentionDurationCheck): a reader
  // of an older version, or a writer that has not committed yet, could lose its files.
  bool enforce_retention_duration = true;
  std::function<int64_t()> clock;  // Default: the system clock
};

struct VacuumResult {
  std::vector<std::string> files;  // relative to the root: deleted, or would be (dry run)
  uint64_t bytes = 0;
};

class Table {
 public:
  // Opens the table at `uri` ("/data/t", "file:///data/t", "s3://bucket/t").
  static Result<Table> Open(const std::string& uri, const OpenOptions& options = {});
  static Result<Table> Open(io::FileSystem* fs, const std::string& root,
                            const OpenOptions& options = {});
  // Whether `root` holds a _delta_log directory.
  static bool IsTable(io::FileSystem* fs, const std::string& root);
  // Creates an empty table: version 0 holds protocol (reader 1 / writer 2) and metaData.
  // AlreadyExists when `root` is a table already.
  static Result<Table> Create(io::FileSystem* fs, const std::string& root,
                              const CommitOptions& options = {});
  // Commits `files` (already under `root`) as one append; creates the table when absent
  // (version 0 then holds them). The API of distributed jobs: one call, one commit.
  static Result<CommitResult> Append(io::FileSystem* fs, const std::string& root,
                                     std::vector<DataFile> files,
                                     const CommitOptions& options = {});

  Table(const Table&) = default;
  Table& operator=(const Table&) = default;
  ~Table();

  // The snapshot this object holds.
  const std::string& root() const { return root_; }
  io::FileSystem* fs() const { return fs_; }
  int64_t version() const;
  int64_t timestamp_ms() const;
  const Protocol& protocol() const;
  const Metadata& metadata() const;
  std::vector<DataFile> files() const;  // live files, sorted by path
  // Sum of the files' record counts; -1 when a file's count is unknown.
  int64_t num_records() const;
  // The records' feature schema (from the metaData sluice writes; approximated from the
  // Spark schema of other writers' tables).
  std::map<std::string, format::FeatureSchema> features() const;
  // The txn version recorded for `app_id` in this snapshot.
  std::optional<int64_t> txn_version(const std::string& app_id) const;
  // The absolute path of a file of this table (decoded); InvalidArgument for a path that
  // leaves the table root (absolute, "..", a URI scheme).
  Result<std::string> FilePath(const DataFile& file) const;

  // Commits, newest first (all when `limit` is unset).
  Result<std::vector<HistoryEntry>> History(std::optional<size_t> limit = std::nullopt) const;

  // Writes. Each plans against the table's latest version (not necessarily this object's),
  // commits once, and on success moves this object to the version it committed.
  Result<CommitResult> AppendFiles(std::vector<DataFile> files, const CommitOptions& options = {});
  // Replaces the files matching `where` (all by default) with `files`.
  Result<CommitResult> Overwrite(std::vector<DataFile> files, const FilePredicate& where = {},
                                 const CommitOptions& options = {});
  // Removes the files matching `where` (their data stays on disk until vacuum).
  Result<CommitResult> Delete(const FilePredicate& where, const CommitOptions& options = {});
  Result<OptimizeResult> Optimize(const OptimizeOptions& options = {});
  // Makes the latest version hold exactly the files of `version`.
  Result<CommitResult> Restore(int64_t version, const CommitOptions& options = {});
  // Deletes files under the root that no version within the retention references. Not a
  // commit (the log is unchanged).
  Result<VacuumResult> Vacuum(const VacuumOptions& options = {});
  // Writes a checkpoint of the latest version now (upgrading the protocol first when the table
  // cannot hold V2 checkpoints yet). Returns the checkpoint's version.
  Result<int64_t> Checkpoint(const CommitOptions& options = {});
  // Moves this object to the latest version.
  Status Refresh();

 private:
  Table(io::FileSystem* fs, std::string root, std::shared_ptr<LogStore> store,
        std::shared_ptr<const TableState> state);
  // Loads the latest state, lets `plan` build the transaction, commits it, refreshes.
  Result<CommitResult> CommitPlanned(
      const CommitOptions& options,
      const std::function<Status(const TableState&, Transaction*)>& plan);

  io::FileSystem* fs_ = nullptr;
  std::string root_;
  std::shared_ptr<LogStore> store_;
  std::shared_ptr<const TableState> state_;
};

// What a loader reads of one table version: its live files in path order (the order that,
// with the seed and epoch, defines the version's sample order).
struct TableSelection {
  std::string root;
  int64_t version = -1;
  std::vector<std::string> files;  // absolute paths
  std::vector<int64_t> records;    // per file, from the log; -1 when it does not say
};
// Resolves a loader's PATH when it names a table: the table directory itself (at the version
// `options` select, else the latest), or "PATH@v12". nullopt when PATH is not a table.
// InvalidArgument when "@vN" and options.version disagree.
Result<std::optional<TableSelection>> ResolveTableRead(io::FileSystem* fs, const std::string& path,
                                                       const OpenOptions& options = {});

// Describes the shard at `relative_path` under `root` (as written, not URI-encoded) for an
// append: its size, its record count (from its index) and its index file.
Result<DataFile> DescribeShard(io::FileSystem* fs, const std::string& root,
                               const std::string& relative_path,
                               const PartitionValues& partition_values = {});

// "source=a b" -> the directory Spark would name it ("source=a b", with / = : % ... escaped).
std::string PartitionDirectory(const PartitionValues& values,
                               const std::vector<std::string>& columns);
// A relative path as the log spells it (percent-encoded) and back.
std::string EncodeLogPath(std::string_view relative_path);
// InvalidArgument when the result would leave the table root.
Result<std::string> DecodeLogPath(std::string_view spelled);

}  // namespace sluice::table

// Table: opening snapshots, history, and the commit path every write shares (load the latest
// state, plan a transaction, RunCommit, checkpoint when due). The operations' plans live in
// operations.cc, optimize.cc and vacuum.cc.
#include "sluice/table/table.h"

#include <chrono>
#include <random>
#include <thread>

#include "checkpoint.h"
#include "commit.h"
#include "file_actions.h"
#include "log_path.h"
#include "log_reader.h"
#include "protocol_support.h"
#include "schema.h"
#include "sluice/format/shard_index.h"
#include "sluice/io/relative_path.h"
#include "sluice/table/timestamp.h"
#include "table_internal.h"
#include "uuid.h"

namespace sluice::table {
namespace {

std::string NormalizeRoot(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

// Protocol and metaData of a table created by `options` (the lowest versions: reader 1,
// writer 2).
std::vector<Action> CreateActions(const CreateOptions& options, int64_t now_ms) {
  Metadata m;
  m.id = NewUuid();
  m.name = options.name;
  m.description = options.description;
  m.schema_string = SparkSchemaJson(options.features, options.partition_columns);
  m.partition_columns = options.partition_columns;
  m.created_time = now_ms;
  m.configuration = options.configuration;
  if (!options.features.empty())
    m.configuration[std::string(kFeaturesProperty)] = FeaturesJson(options.features);
  return {Protocol{}, std::move(m)};
}

// Table properties sluice acts on must make sense before they are committed.
Status CheckCreateConfiguration(const CreateOptions& options, const std::string& root) {
  auto it = options.configuration.find(std::string(kCheckpointIntervalProperty));
  if (it != options.configuration.end() && !ParseCheckpointInterval(it->second).has_value()) {
    return InvalidArgument("table " + root + ": " + it->first + " must be a whole number of " +
                           "commits (0 = never checkpoint), not '" + it->second + "'");
  }
  return Status::OK();
}

// Sluice checkpoints tables it created, and tables that hold V2 checkpoints already; it never
// upgrades the protocol of another writer's table on its own.
int64_t AutoCheckpointInterval(const Protocol& protocol, const Metadata& metadata,
                               const CommitOptions& options) {
  if (options.checkpoint_interval <= 0) return 0;
  bool ours = metadata.format_provider == kSluiceFormatProvider;
  if (!ours && !protocol.HasReaderFeature(kV2CheckpointFeature)) return 0;
  return CheckpointInterval(metadata, options.checkpoint_interval);
}

CommitClock ClockFor(const CommitOptions& options) {
  CommitClock c;
  c.now_ms = [clock = options.clock] { return clock ? clock() : NowMs(); };
  // Only after storage errors: a lost race is retried at once (someone made progress).
  c.wait_before_retry = [](int attempt) {
    thread_local std::minstd_rand jitter(std::random_device{}());
    int base = std::min(1000, 10 << std::min(attempt, 7));
    std::this_thread::sleep_for(std::chrono::milliseconds(base / 2 + jitter() % (base / 2 + 1)));
  };
  return c;
}

// After committing `version`: the state at that version, and its checkpoint when due.
void CheckpointIfDue(LogStore* store, const std::string& root, const TableState& before,
                     int64_t version, int64_t interval, int64_t now_ms, CommitResult* result) {
  if (interval <= 0 || version <= 0 || version % interval != 0) return;
  TableState state = before;
  const std::string path = LogDir(root) + "/" + CommitFileName(version);
  const std::string source = CommitSource(path, version);
  Result<std::string> text = store->Read(path);
  Result<ParsedLogFile> file = text.ok() ? ParseActions(*text, source) : text.status();
  Status s = file.status();
  if (s.ok()) s = ApplyCommit(&state, version, *file, 0, source);
  if (s.ok()) s = WriteCheckpoint(store, root, state, now_ms);
  if (s.ok()) {
    result->checkpoint_version = version;
  } else {
    result->checkpoint_error = s.ToString();
  }
}

bool TableAbsent(const Status& s) { return s.code() == StatusCode::kNotFound; }

// The latest state: `held` (a version of this table) caught up with the commits after it,
// which reads only those; else loaded from the checkpoint and the commits after it.
Result<TableState> LatestState(LogStore* store, const std::string& root, const TableState* held) {
  if (held == nullptr || held->version < 0) return LoadTableState(store, root, std::nullopt);
  TableState state = *held;
  SLUICE_RETURN_IF_ERROR(CatchUp(store, root, &state).status());
  return state;
}

}  // namespace

Result<CommitResult> CommitToTable(LogStore* store, const std::string& root,
                                   const CommitOptions& options, const PlanFn& plan,
                                   bool may_create, TableState* final_state,
                                   const TableState* held) {
  const CommitClock clock = ClockFor(options);
  for (int round = 0;; ++round) {
    TableState state;
    Result<TableState> loaded = LatestState(store, root, round == 0 ? held : nullptr);
    if (loaded.ok()) {
      state = std::move(*loaded);
      SLUICE_RETURN_IF_ERROR(CheckCanWrite(*state.protocol, *state.metadata, root));
    } else if (!may_create || !TableAbsent(loaded.status())) {
      return loaded.status();
    }
    Transaction txn;
    txn.read_version = state.version;
    SLUICE_RETURN_IF_ERROR(plan(state, &txn));
    if (txn.actions.empty() && state.version >= 0) {
      *final_state = std::move(state);
      CommitResult nothing;  // nothing to commit
      nothing.version = final_state->version;
      return nothing;
    }
    if (options.txn.has_value()) {
      txn.actions.push_back(Txn{options.txn->app_id, options.txn->version, std::nullopt});
    }
    Protocol protocol;
    Metadata metadata;
    if (state.version < 0) {
      SLUICE_RETURN_IF_ERROR(CheckCreateConfiguration(options.create, root));
      std::vector<Action> create = CreateActions(options.create, clock.now_ms());
      metadata = std::get<Metadata>(create[1]);
      txn.actions.insert(txn.actions.begin(), create.begin(), create.end());
    } else {
      protocol = *state.protocol;
      metadata = *state.metadata;
    }
    txn.checkpoint_interval = AutoCheckpointInterval(protocol, metadata, options);
    std::optional<Conflict> conflict;
    Result<CommitResult> r = RunCommit(store, root, &state, txn, std::max(1, options.max_attempts),
                                       clock, &conflict, std::max(0, options.max_storage_retries));
    if (!r.ok() && conflict.has_value() && conflict->kind == ConflictKind::kTableExists &&
        round == 0 && txn.read_version < 0) {
      continue;  // another writer created the table first: write to it
    }
    SLUICE_RETURN_IF_ERROR(r.status());
    if (!r->duplicate) {
      CheckpointIfDue(store, root, state, r->version, txn.checkpoint_interval, clock.now_ms(), &*r);
    }
    SLUICE_RETURN_IF_ERROR(CatchUp(store, root, &state).status());
    *final_state = std::move(state);
    return r;
  }
}

Table::Table(io::FileSystem* fs, std::string root, std::shared_ptr<LogStore> store,
             std::shared_ptr<const TableState> state)
    : fs_(fs), root_(std::move(root)), store_(std::move(store)), state_(std::move(state)) {}

Table::~Table() = default;

Result<Table> Table::Open(const std::string& uri, const OpenOptions& options) {
  std::string local;
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * fs, io::FileSystemFor(uri, &local));
  return Open(fs, local, options);
}

Result<Table> Table::Open(io::FileSystem* fs, const std::string& root_in,
                          const OpenOptions& options) {
  const std::string root = NormalizeRoot(root_in);
  std::shared_ptr<LogStore> store =
      options.log_store ? options.log_store : std::shared_ptr<LogStore>(NewFileSystemLogStore(fs));
  std::optional<int64_t> version = options.version;
  if (options.timestamp_ms.has_value()) {
    if (version.has_value()) {
      return InvalidArgument("open " + root + ": give a version or a timestamp, not both");
    }
    SLUICE_ASSIGN_OR_RETURN(version, VersionAtTimestamp(store.get(), root, *options.timestamp_ms));
  }
  SLUICE_ASSIGN_OR_RETURN(TableState state, LoadTableState(store.get(), root, version));
  SLUICE_RETURN_IF_ERROR(CheckCanRead(*state.protocol, root));
  return Table(fs, root, std::move(store), std::make_shared<const TableState>(std::move(state)));
}

bool Table::IsTable(io::FileSystem* fs, const std::string& root) {
  return fs->IsDirectory(LogDir(NormalizeRoot(root)));
}

Result<Table> Table::Create(io::FileSystem* fs, const std::string& root_in,
                            const CommitOptions& options) {
  const std::string root = NormalizeRoot(root_in);
  std::shared_ptr<LogStore> store = NewFileSystemLogStore(fs);
  if (IsTable(fs, root) && LoadTableState(store.get(), root, std::nullopt).ok()) {
    return AlreadyExists(root + " is a table already");
  }
  TableState state;
  CommitOptions o = options;
  o.txn.reset();
  auto plan = [&](const TableState& s, Transaction* txn) -> Status {
    if (s.version >= 0) return AlreadyExists(root + " is a table already");
    txn->info.operation = "CREATE TABLE";
    txn->info.is_blind_append = true;
    return Status::OK();
  };
  SLUICE_RETURN_IF_ERROR(CommitToTable(store.get(), root, o, plan, true, &state).status());
  return Table(fs, root, std::move(store), std::make_shared<const TableState>(std::move(state)));
}

Result<CommitResult> Table::Append(io::FileSystem* fs, const std::string& root_in,
                                   std::vector<DataFile> files, const CommitOptions& options) {
  const std::string root = NormalizeRoot(root_in);
  std::unique_ptr<LogStore> store = NewFileSystemLogStore(fs);
  TableState state;
  return CommitToTable(store.get(), root, options, AppendPlan(std::move(files), options, root),
                       true, &state);
}

int64_t Table::version() const { return state_->version; }
int64_t Table::timestamp_ms() const { return state_->timestamp_ms; }
const Protocol& Table::protocol() const { return *state_->protocol; }
const Metadata& Table::metadata() const { return *state_->metadata; }

std::vector<DataFile> Table::files() const {
  std::vector<DataFile> out;
  out.reserve(state_->files.size());
  for (const auto& [_, add] : state_->files) out.push_back(ToDataFile(add));
  return out;
}

int64_t Table::num_records() const {
  int64_t total = 0;
  for (const auto& [_, add] : state_->files) {
    std::optional<int64_t> n = add.num_records();
    if (!n.has_value()) return -1;
    total += *n;
  }
  return total;
}

std::map<std::string, format::FeatureSchema> Table::features() const {
  return FeaturesOf(*state_->metadata);
}

std::optional<int64_t> Table::txn_version(const std::string& app_id) const {
  auto it = state_->txns.find(app_id);
  if (it == state_->txns.end()) return std::nullopt;
  return it->second.version;
}

// Besides the lexical rules of DecodeLogPath, a file or index that resolves outside the root
// through a symbolic link is refused (io::CheckInsideRoot, the rule of manifests), naming this
// version and the log file that added the path. Reads, optimize and vacuum all ask here.
Result<std::string> Table::FilePath(const DataFile& file) const {
  Result<std::string> relative = DecodeLogPath(file.path);
  Status inside = relative.status();
  // The file and the index a reader opens next to it (format::ShardIndex::IndexPathFor).
  if (inside.ok()) inside = io::CheckInsideRoot(fs_, root_, *relative);
  if (inside.ok()) {
    inside = io::CheckInsideRoot(fs_, root_, format::ShardIndex::IndexPathFor(*relative));
  }
  if (!inside.ok()) {
    return Status(inside.code(), "table " + root_ + " version " + std::to_string(version()) +
                                     ": data file '" + file.path + "' added by " +
                                     FindAddingLogFile(store_.get(), root_, version(), file.path) +
                                     ": " + inside.message());
  }
  return io::JoinPath(root_, *relative);
}

Result<std::vector<HistoryEntry>> Table::History(std::optional<size_t> limit) const {
  SLUICE_ASSIGN_OR_RETURN(std::vector<CommitRecord> commits,
                          ReadCommits(store_.get(), root_, std::nullopt));
  std::vector<HistoryEntry> out;
  for (auto it = commits.rbegin(); it != commits.rend(); ++it) {
    if (it->version > state_->version) continue;  // newer than this snapshot
    if (limit.has_value() && out.size() >= *limit) break;
    HistoryEntry e;
    e.version = it->version;
    e.timestamp_ms = it->timestamp_ms;
    if (it->info.has_value()) {
      e.operation = it->info->operation;
      e.operation_parameters = it->info->operation_parameters;
      e.operation_metrics = it->info->operation_metrics;
      e.commit_info_json = it->info->json;
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<CommitResult> Table::CommitPlanned(const CommitOptions& options, const PlanFn& plan) {
  TableState state;
  SLUICE_ASSIGN_OR_RETURN(CommitResult r, CommitToTable(store_.get(), root_, options, plan, false,
                                                        &state, state_.get()));
  state_ = std::make_shared<const TableState>(std::move(state));
  return r;
}

Result<CommitResult> Table::AppendFiles(std::vector<DataFile> files, const CommitOptions& options) {
  return CommitPlanned(options, AppendPlan(std::move(files), options, root_));
}

Result<int64_t> Table::Checkpoint(const CommitOptions& options) {
  SLUICE_RETURN_IF_ERROR(Refresh());
  if (!state_->protocol->HasReaderFeature(kV2CheckpointFeature)) {
    auto plan = [](const TableState& s, Transaction* txn) -> Status {
      txn->actions.push_back(ProtocolWithV2Checkpoints(*s.protocol));
      txn->info.operation = "UPGRADE PROTOCOL";
      txn->info.operation_parameters["newProtocol"] = SerializeAction(txn->actions[0]);
      return Status::OK();
    };
    CommitOptions o = options;
    o.txn.reset();
    o.checkpoint_interval = 0;
    SLUICE_RETURN_IF_ERROR(CommitPlanned(o, plan).status());
  }
  const int64_t now = options.clock ? options.clock() : NowMs();
  SLUICE_RETURN_IF_ERROR(WriteCheckpoint(store_.get(), root_, *state_, now));
  return state_->version;
}

Status Table::Refresh() {
  TableState state = *state_;
  SLUICE_RETURN_IF_ERROR(CatchUp(store_.get(), root_, &state).status());
  SLUICE_RETURN_IF_ERROR(CheckCanRead(*state.protocol, root_));
  state_ = std::make_shared<const TableState>(std::move(state));
  return Status::OK();
}

Result<DataFile> DescribeShard(io::FileSystem* fs, const std::string& root,
                               const std::string& relative_path,
                               const PartitionValues& partition_values) {
  const std::string full = io::JoinPath(NormalizeRoot(root), relative_path);
  SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, fs->Stat(full));
  format::ShardReaderOptions ro;
  ro.index_directory_bytes = 1024;
  SLUICE_ASSIGN_OR_RETURN(auto reader, format::ShardReader::Open(fs, full, ro));
  DataFile f;
  f.path = EncodeLogPath(relative_path);
  f.size = static_cast<int64_t>(info.size);
  f.records = static_cast<int64_t>(reader->num_records());
  f.partition_values = partition_values;
  f.modification_time_ms = info.modification_time_ms;
  if (fs->Exists(format::ShardIndex::IndexPathFor(full))) {
    f.tags[std::string(kIndexTag)] = EncodeLogPath(format::ShardIndex::IndexPathFor(relative_path));
  }
  return f;
}

}  // namespace sluice::table

namespace sluice::table {
namespace {

// "PATH@v12" -> (PATH, 12); nullopt when `path` has no such suffix.
std::optional<std::pair<std::string, int64_t>> SplitVersionSuffix(const std::string& path) {
  size_t at = path.rfind("@v");
  if (at == std::string::npos || at == 0 || at + 2 >= path.size()) return std::nullopt;
  int64_t v = 0;
  for (size_t i = at + 2; i < path.size(); ++i) {
    if (path[i] < '0' || path[i] > '9' || v > (INT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + (path[i] - '0');
  }
  return std::make_pair(path.substr(0, at), v);
}

}  // namespace

Result<std::optional<TableSelection>> ResolveTableRead(io::FileSystem* fs, const std::string& path,
                                                       const OpenOptions& options) {
  std::string root = NormalizeRoot(path);
  OpenOptions o = options;
  if (!Table::IsTable(fs, root)) {
    auto split = SplitVersionSuffix(root);
    if (!split.has_value() || fs->Exists(root) || !Table::IsTable(fs, split->first)) {
      return std::optional<TableSelection>();
    }
    if (o.version.has_value() && *o.version != split->second) {
      return InvalidArgument("read " + path + ": the path asks for version " +
                             std::to_string(split->second) + ", the options for version " +
                             std::to_string(*o.version));
    }
    if (o.timestamp_ms.has_value()) {
      return InvalidArgument("read " + path + ": give a version or a timestamp, not both");
    }
    root = NormalizeRoot(split->first);
    o.version = split->second;
  }
  SLUICE_ASSIGN_OR_RETURN(Table t, Table::Open(fs, root, o));
  // Refused here rather than as "damaged shard" errors per file (or, under on_error = skip,
  // an empty epoch): Spark and delta-rs tables hold Parquet files.
  const std::string& provider = t.metadata().format_provider;
  if (provider != kSluiceFormatProvider) {
    return Unimplemented("table " + root + " version " + std::to_string(t.version()) +
                         ": its data files are " + (provider.empty() ? "of no format" : provider) +
                         " (metaData.format.provider); sluice reads tables of sluice shards "
                         "(provider \"" +
                         std::string(kSluiceFormatProvider) + "\")");
  }
  TableSelection s;
  s.root = t.root();
  s.version = t.version();
  for (const DataFile& f : t.files()) {
    SLUICE_ASSIGN_OR_RETURN(std::string full, t.FilePath(f));
    s.files.push_back(std::move(full));
    s.records.push_back(f.records);
  }
  if (s.files.empty()) {
    return FailedPrecondition("table " + root + " has no files at version " +
                              std::to_string(s.version));
  }
  return std::optional<TableSelection>(std::move(s));
}

}  // namespace sluice::table

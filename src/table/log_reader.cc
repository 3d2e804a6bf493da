#include "log_reader.h"

#include <algorithm>

#include "checkpoint.h"
#include "sluice/table/timestamp.h"

namespace sluice::table {
namespace {

Status ApplySegmentCheckpoint(LogStore* store, const std::string& log_dir,
                              const LogEntry& checkpoint, TableState* state) {
  std::string path = log_dir + "/" + checkpoint.path.name;
  SLUICE_ASSIGN_OR_RETURN(ParsedLogFile file, ReadLogFile(store, path));
  return ApplyCheckpoint(state, checkpoint.path.version, file, path);
}

Status ApplySegmentCommit(LogStore* store, const std::string& log_dir, const LogEntry& commit,
                          TableState* state) {
  std::string path = log_dir + "/" + commit.path.name;
  Result<std::string> text = store->Read(path);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return DataLoss(path + " was listed but cannot be read any more (deleted meanwhile?)");
  }
  SLUICE_RETURN_IF_ERROR(text.status());
  const std::string source = CommitSource(path, commit.path.version);
  SLUICE_ASSIGN_OR_RETURN(ParsedLogFile file, ParseActions(*text, source));
  return ApplyCommit(state, commit.path.version, file, commit.modification_time_ms, source);
}

// Replays a segment. `*checkpoint_failed` tells whether the error came from the checkpoint.
Result<TableState> Replay(LogStore* store, const std::string& log_dir, const LogSegment& seg,
                          bool* checkpoint_failed) {
  TableState state;
  *checkpoint_failed = false;
  if (seg.checkpoint.has_value()) {
    Status s = ApplySegmentCheckpoint(store, log_dir, *seg.checkpoint, &state);
    if (!s.ok()) {
      *checkpoint_failed = true;
      return s;
    }
  }
  for (const LogEntry& commit : seg.commits) {
    SLUICE_RETURN_IF_ERROR(ApplySegmentCommit(store, log_dir, commit, &state));
  }
  return state;
}

// The latest state from the checkpoint _last_checkpoint names, with no listing; nullopt when
// there is no usable hint (the caller lists the log instead).
std::optional<TableState> LoadFromHint(LogStore* store, const std::string& root) {
  const std::string log_dir = LogDir(root);
  Result<std::string> text = store->Read(log_dir + "/" + std::string(kLastCheckpointName));
  if (!text.ok()) return std::nullopt;
  std::optional<LastCheckpointHint> hint = ParseLastCheckpoint(*text);
  if (!hint.has_value() || !hint->file.has_value()) return std::nullopt;
  LogPath path = ParseLogPath(*hint->file);
  if (path.kind != LogFileKind::kUuidCheckpoint || !path.json || path.version != hint->version) {
    return std::nullopt;
  }
  TableState state;
  if (!ApplySegmentCheckpoint(store, log_dir, LogEntry{path, 0}, &state).ok()) return std::nullopt;
  if (!CatchUp(store, root, &state).ok()) return std::nullopt;
  return state;
}

// The commitInfo of a commit file. Only the line holding it is parsed when it is spelled
// compactly, as every writer does; otherwise the whole file.
std::optional<CommitInfo> ReadCommitInfoLine(std::string_view whole, const std::string& source) {
  std::string_view text = whole;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) continue;
    if (line.substr(start, 13) != "{\"commitInfo\"") continue;
    Result<ParsedLogFile> parsed = ParseActions(line, source);
    if (parsed.ok()) return FindCommitInfo(*parsed);
  }
  Result<ParsedLogFile> parsed = ParseActions(whole, source);
  return parsed.ok() ? FindCommitInfo(*parsed) : std::nullopt;
}

}  // namespace

std::string LogDir(const std::string& root) { return io::JoinPath(root, kLogDirName); }

std::string CommitSource(const std::string& path, int64_t version) {
  return path + " (version " + std::to_string(version) + ")";
}

Result<std::vector<LogEntry>> ListLog(LogStore* store, const std::string& root) {
  Result<std::vector<LogFileMeta>> files = store->List(LogDir(root), "");
  if (!files.ok() && files.status().code() == StatusCode::kNotFound) {
    return NotFound(root + " is not a table: it has no " + std::string(kLogDirName) + " directory");
  }
  SLUICE_RETURN_IF_ERROR(files.status());
  std::vector<LogEntry> out;
  out.reserve(files->size());
  for (const LogFileMeta& f : *files) {
    out.push_back(LogEntry{ParseLogPath(io::Basename(f.path)), f.modification_time_ms});
  }
  return out;
}

Result<ParsedLogFile> ReadLogFile(LogStore* store, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, store->Read(path));
  return ParseActions(text, path);
}

Result<int64_t> CatchUp(LogStore* store, const std::string& root, TableState* state) {
  const std::string log_dir = LogDir(root);
  int64_t applied = 0;
  while (true) {
    int64_t v = state->version + 1;
    std::string path = log_dir + "/" + CommitFileName(v);
    Result<std::string> text = store->Read(path);
    if (!text.ok() && text.status().code() == StatusCode::kNotFound) return applied;
    SLUICE_RETURN_IF_ERROR(text.status());
    const std::string source = CommitSource(path, v);
    SLUICE_ASSIGN_OR_RETURN(ParsedLogFile file, ParseActions(*text, source));
    SLUICE_RETURN_IF_ERROR(ApplyCommit(state, v, file, 0, source));
    ++applied;
  }
}

Result<TableState> LoadTableState(LogStore* store, const std::string& root,
                                  std::optional<int64_t> version) {
  if (!version.has_value()) {
    if (std::optional<TableState> state = LoadFromHint(store, root)) return std::move(*state);
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<LogEntry> listing, ListLog(store, root));
  const std::string log_dir = LogDir(root);
  std::vector<std::string> skip;
  Status first_checkpoint_error;
  while (true) {
    Result<LogSegment> seg = BuildLogSegment(listing, version, log_dir, skip);
    if (!seg.ok()) {
      if (first_checkpoint_error.ok()) return seg.status();
      // The version needed the checkpoint that failed: say why it could not be used.
      return Status(first_checkpoint_error.code(),
                    first_checkpoint_error.message() + "; " + seg.status().message());
    }
    bool checkpoint_failed = false;
    Result<TableState> state = Replay(store, log_dir, *seg, &checkpoint_failed);
    if (state.ok() || !checkpoint_failed) return state;
    // A damaged checkpoint costs time, not data: replay from an older one, or from 0.
    if (first_checkpoint_error.ok()) first_checkpoint_error = state.status();
    skip.push_back(seg->checkpoint->path.name);
  }
}

std::string FindAddingLogFile(LogStore* store, const std::string& root, int64_t version,
                              const std::string& spelled) {
  std::string fallback = "the log of " + root;
  Result<std::vector<LogEntry>> listing = ListLog(store, root);
  if (!listing.ok()) return fallback;
  bool checkpoint_seen = false;
  for (auto it = listing->rbegin(); it != listing->rend(); ++it) {
    const LogPath& name = it->path;
    if (name.version > version) continue;
    const std::string path = LogDir(root) + "/" + name.name;
    if (name.is_checkpoint() && !checkpoint_seen) {
      checkpoint_seen = true;
      fallback = "checkpoint " + path;
    }
    if (name.kind != LogFileKind::kCommit) continue;
    Result<ParsedLogFile> file = ReadLogFile(store, path);
    if (!file.ok()) continue;
    for (const Action& a : file->actions) {
      const AddFile* add = std::get_if<AddFile>(&a);
      if (add != nullptr && add->path == spelled) return CommitSource(path, name.version);
    }
  }
  return fallback;
}

Result<std::vector<CommitRecord>> ReadCommits(LogStore* store, const std::string& root,
                                              std::optional<size_t> limit) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<LogEntry> listing, ListLog(store, root));
  std::vector<const LogEntry*> commits;
  for (const LogEntry& e : listing) {
    if (e.path.kind == LogFileKind::kCommit) commits.push_back(&e);
  }
  if (commits.empty()) return NotFound(LogDir(root) + ": no commits (not a Delta table)");
  size_t first = limit.has_value() && *limit < commits.size() ? commits.size() - *limit : 0;
  std::vector<CommitRecord> out;
  int64_t previous = 0;
  for (size_t i = first; i < commits.size(); ++i) {
    const LogEntry& e = *commits[i];
    std::string path = LogDir(root) + "/" + e.path.name;
    SLUICE_ASSIGN_OR_RETURN(std::string text, store->Read(path));
    CommitRecord r;
    r.version = e.path.version;
    r.info = ReadCommitInfoLine(text, path);
    r.timestamp_ms = CommitTimestamp(r.info, e.modification_time_ms, previous);
    previous = r.timestamp_ms;
    out.push_back(std::move(r));
  }
  return out;
}

Result<int64_t> VersionAtTimestamp(LogStore* store, const std::string& root, int64_t timestamp_ms) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<CommitRecord> commits, ReadCommits(store, root));
  auto after =
      std::upper_bound(commits.begin(), commits.end(), timestamp_ms,
                       [](int64_t t, const CommitRecord& c) { return t < c.timestamp_ms; });
  if (after == commits.begin()) {
    return InvalidArgument("timestamp " + FormatTimestamp(timestamp_ms) +
                           " is before the first commit of " + root + " (version " +
                           std::to_string(commits.front().version) + " at " +
                           FormatTimestamp(commits.front().timestamp_ms) + ")");
  }
  return std::prev(after)->version;
}

}  // namespace sluice::table

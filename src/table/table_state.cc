#include "table_state.h"

namespace sluice::table {
namespace {

void AddLive(TableState* s, AddFile add) {
  s->tombstones.erase(add.path);
  std::string key = add.path;
  s->files[key] = std::move(add);
}

void Tombstone(TableState* s, RemoveFile remove) {
  s->files.erase(remove.path);
  std::string key = remove.path;
  s->tombstones[key] = std::move(remove);
}

// At most one protocol and one metaData per log file (PROTOCOL.md, "Delta Log Entries").
Status CheckSingletons(const ParsedLogFile& file, const std::string& source) {
  int protocols = 0, metadatas = 0;
  for (const Action& a : file.actions) {
    protocols += std::holds_alternative<Protocol>(a);
    metadatas += std::holds_alternative<Metadata>(a);
  }
  if (protocols > 1) return DataLoss(source + ": more than one protocol action");
  if (metadatas > 1) return DataLoss(source + ": more than one metaData action");
  return Status::OK();
}

}  // namespace

std::optional<CommitInfo> FindCommitInfo(const ParsedLogFile& commit) {
  for (const Action& a : commit.actions) {
    if (auto* c = std::get_if<CommitInfo>(&a)) return *c;
  }
  return std::nullopt;
}

int64_t CommitTimestamp(const std::optional<CommitInfo>& info, int64_t file_mtime_ms,
                        int64_t previous_ms) {
  int64_t t = file_mtime_ms;
  if (info.has_value() && info->in_commit_timestamp.has_value()) {
    t = *info->in_commit_timestamp;
  } else if (info.has_value() && info->timestamp.has_value()) {
    t = *info->timestamp;
  }
  return previous_ms > 0 && t <= previous_ms ? previous_ms + 1 : t;
}

Status ApplyCommit(TableState* state, int64_t version, const ParsedLogFile& commit,
                   int64_t file_mtime_ms, const std::string& source) {
  if (version != state->version + 1) {
    return Internal(source + ": commit applied to version " + std::to_string(state->version) +
                    " (versions must be consecutive)");
  }
  if (commit.lines == 0) {
    return DataLoss(source + ": the commit file holds no action (empty or only whitespace): " +
                    "damaged, or cut short by a crash or a full disk");
  }
  SLUICE_RETURN_IF_ERROR(CheckSingletons(commit, source));
  std::optional<CommitInfo> info = FindCommitInfo(commit);
  if (info.has_value() && info->sluice_actions.has_value() &&
      *info->sluice_actions != commit.lines - 1) {
    return DataLoss(source + ": truncated commit: its commitInfo announces " +
                    std::to_string(*info->sluice_actions) + " actions after it, the file holds " +
                    std::to_string(commit.lines - 1));
  }
  // Removes first, then adds: a commit that removes and re-adds a path keeps it live.
  for (const Action& a : commit.actions) {
    if (auto* r = std::get_if<RemoveFile>(&a)) Tombstone(state, *r);
  }
  for (const Action& a : commit.actions) {
    if (auto* p = std::get_if<Protocol>(&a)) state->protocol = *p;
    if (auto* m = std::get_if<Metadata>(&a)) state->metadata = *m;
    if (auto* add = std::get_if<AddFile>(&a)) AddLive(state, *add);
    if (auto* t = std::get_if<Txn>(&a)) state->txns[t->app_id] = *t;
  }
  if (!state->protocol.has_value() || !state->metadata.has_value()) {
    return DataLoss(source + ": version " + std::to_string(version) + " has no " +
                    (state->protocol.has_value() ? "metaData" : "protocol") +
                    " action (the first version of a table must have both)");
  }
  state->version = version;
  state->timestamp_ms = CommitTimestamp(info, file_mtime_ms, state->timestamp_ms);
  state->commit_info = std::move(info);
  return Status::OK();
}

Status ApplyCheckpoint(TableState* state, int64_t version, const ParsedLogFile& checkpoint,
                       const std::string& source) {
  SLUICE_RETURN_IF_ERROR(CheckSingletons(checkpoint, source));
  TableState s;
  for (const Action& a : checkpoint.actions) {
    if (auto* p = std::get_if<Protocol>(&a)) s.protocol = *p;
    if (auto* m = std::get_if<Metadata>(&a)) s.metadata = *m;
    if (auto* add = std::get_if<AddFile>(&a)) AddLive(&s, *add);
    if (auto* r = std::get_if<RemoveFile>(&a)) s.tombstones[r->path] = *r;
    if (auto* t = std::get_if<Txn>(&a)) s.txns[t->app_id] = *t;
    if (auto* c = std::get_if<CheckpointMetadata>(&a)) {
      if (c->version != version) {
        return DataLoss(source + ": checkpointMetadata.version " + std::to_string(c->version) +
                        " in the checkpoint of version " + std::to_string(version));
      }
      auto ts = c->tags.find("sluice.commitTimestamp");
      if (ts != c->tags.end()) s.timestamp_ms = std::strtoll(ts->second.c_str(), nullptr, 10);
    }
    if (auto* sc = std::get_if<Sidecar>(&a)) {
      return Unimplemented(source + ": the checkpoint keeps its files in sidecar " + sc->path +
                           " (Parquet), which sluice cannot read: no Parquet library is packaged");
    }
  }
  for (const auto& [path, _] : s.files) s.tombstones.erase(path);
  if (!s.protocol.has_value() || !s.metadata.has_value()) {
    return DataLoss(source + ": checkpoint has no " +
                    std::string(s.protocol.has_value() ? "metaData" : "protocol") + " action");
  }
  s.version = version;
  *state = std::move(s);
  return Status::OK();
}

}  // namespace sluice::table

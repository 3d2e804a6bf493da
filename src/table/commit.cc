#include "commit.h"

#include "checkpoint.h"
#include "log_path.h"
#include "log_reader.h"
#include "uuid.h"

namespace sluice::table {
namespace {

std::string CommitPath(const std::string& root, int64_t version) {
  return LogDir(root) + "/" + CommitFileName(version);
}

// The txn (appId, version) already in the state at or past the transaction's, if any.
std::optional<Txn> AlreadyCommitted(const Transaction& txn, const TableState& state) {
  for (const Action& a : txn.actions) {
    auto* t = std::get_if<Txn>(&a);
    if (t == nullptr) continue;
    auto it = state.txns.find(t->app_id);
    if (it != state.txns.end() && it->second.version >= t->version) return it->second;
  }
  return std::nullopt;
}

bool WrittenBy(const ParsedLogFile& commit, const std::string& attempt_id) {
  std::optional<CommitInfo> info = FindCommitInfo(commit);
  return info.has_value() && info->txn_id == attempt_id;
}

// After a lost race: reads the commits from state->version + 1 on, applying each to *state.
// Our own commit among them (a put that failed ambiguously but landed) means committed.
AttemptResult ReadWinners(LogStore* store, const std::string& root, TableState* state,
                          const Transaction& txn, const std::string& attempt_id) {
  AttemptResult r;
  while (true) {
    const int64_t v = state->version + 1;
    const std::string path = CommitPath(root, v);
    Result<std::string> text = store->Read(path);
    if (!text.ok()) {
      if (text.status().code() != StatusCode::kNotFound) r.error = text.status();
      return r;  // retryable
    }
    Result<ParsedLogFile> winner = ParseActions(*text, path);
    if (!winner.ok()) {
      r.error = winner.status();
      return r;
    }
    if (WrittenBy(*winner, attempt_id)) {
      r.outcome = CommitOutcome::kCommitted;
      r.version = v;
      Status s = ApplyCommit(state, v, *winner, 0, path);
      if (!s.ok()) r.error = s;
      return r;
    }
    std::optional<Conflict> conflict = FindConflict(txn, *winner, path);
    Status applied = ApplyCommit(state, v, *winner, 0, path);
    if (applied.ok() && AlreadyCommitted(txn, *state).has_value()) {
      // Another run of the same job committed this txn version first: nothing to do.
      r.outcome = CommitOutcome::kCommitted;
      r.version = v;
      r.duplicate = true;
      return r;
    }
    if (conflict.has_value()) {
      r.outcome = CommitOutcome::kConflicted;
      r.conflict = std::move(conflict);
      return r;
    }
    if (!applied.ok()) {
      r.error = applied;
      return r;
    }
  }
}

}  // namespace

std::string CommitText(const Transaction& txn, const TableState& state, int64_t version,
                       const std::string& attempt_id, int64_t now_ms) {
  // A later commit never gets an earlier time (Spark makes history timestamps monotonic the
  // same way).
  const int64_t timestamp = std::max(now_ms, state.timestamp_ms + 1);
  std::vector<Action> actions;
  if (txn.checkpoint_interval > 0 && version > 0 && version % txn.checkpoint_interval == 0 &&
      state.protocol.has_value() && !state.protocol->HasReaderFeature(kV2CheckpointFeature)) {
    actions.push_back(ProtocolWithV2Checkpoints(*state.protocol));
  }
  for (const Action& a : txn.actions) {
    actions.push_back(a);
    if (auto* r = std::get_if<RemoveFile>(&actions.back()); r && !r->deletion_timestamp) {
      r->deletion_timestamp = timestamp;
    }
    if (auto* t = std::get_if<Txn>(&actions.back()); t && !t->last_updated) {
      t->last_updated = timestamp;
    }
  }
  CommitInfo info = txn.info;
  info.timestamp = timestamp;
  if (txn.read_version >= 0) info.read_version = txn.read_version;
  info.txn_id = attempt_id;
  info.engine_info = std::string("sluice/") + SLUICE_VERSION;
  info.sluice_actions = static_cast<int64_t>(actions.size());
  return SerializeAction(info) + "\n" + SerializeActions(actions);
}

AttemptResult TryCommit(LogStore* store, const std::string& root, TableState* state,
                        const Transaction& txn, const std::string& attempt_id,
                        const CommitClock& clock) {
  AttemptResult r;
  if (txn.read_version < 0 && state->version >= 0) {
    r.outcome = CommitOutcome::kConflicted;
    r.conflict = Conflict{ConflictKind::kTableExists, root + " exists already"};
    return r;
  }
  if (std::optional<Txn> done = AlreadyCommitted(txn, *state)) {
    r.outcome = CommitOutcome::kCommitted;
    r.version = state->version;
    r.duplicate = true;
    return r;
  }
  const int64_t v = state->version + 1;
  const std::string path = CommitPath(root, v);
  Status put = store->PutIfAbsent(path, CommitText(txn, *state, v, attempt_id, clock.now_ms()));
  if (put.ok()) {
    r.outcome = CommitOutcome::kCommitted;
    r.version = v;
    return r;
  }
  r = ReadWinners(store, root, state, txn, attempt_id);
  if (r.outcome == CommitOutcome::kRetryable && put.code() != StatusCode::kAlreadyExists &&
      r.error.ok()) {
    r.error = put;  // the put failed and nobody else wrote the version: retry it
  }
  return r;
}

bool IsRetryableStorageError(const Status& status) {
  return status.code() == StatusCode::kIoError || status.code() == StatusCode::kResourceExhausted;
}

Result<CommitResult> RunCommit(LogStore* store, const std::string& root, TableState* state,
                               const Transaction& txn, int max_attempts, const CommitClock& clock,
                               std::optional<Conflict>* conflict, int max_storage_retries) {
  const std::string attempt_id = NewUuid();
  int storage_errors = 0;  // in a row
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    AttemptResult r = TryCommit(store, root, state, txn, attempt_id, clock);
    switch (r.outcome) {
      case CommitOutcome::kCommitted: {
        CommitResult done;
        done.version = r.version;
        done.attempts = attempt;
        done.duplicate = r.duplicate;
        return done;
      }
      case CommitOutcome::kConflicted:
        if (conflict != nullptr) *conflict = r.conflict;
        return FailedPrecondition("commit conflict (" +
                                  std::string(ConflictKindName(r.conflict->kind)) +
                                  "): " + r.conflict->reason + "; nothing was committed");
      case CommitOutcome::kRetryable:
        if (r.error.ok()) {
          storage_errors = 0;  // lost a race: someone made progress
          break;
        }
        if (!IsRetryableStorageError(r.error) || ++storage_errors > max_storage_retries) {
          return r.error.WithContext("commit to " + root + " (attempt " + std::to_string(attempt) +
                                     ")");
        }
        if (clock.wait_before_retry) clock.wait_before_retry(storage_errors);
        break;
    }
  }
  return ResourceExhausted("commit to " + root + ": gave up after " + std::to_string(max_attempts) +
                           " attempts (other writers kept committing first)");
}

}  // namespace sluice::table

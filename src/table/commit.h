// Optimistic commits (PROTOCOL.md, "Creation of New Log Entries"): a transaction plans
// against the state of version N, then writes N+1.json only if absent. A writer that loses
// the race reads the commits that won, checks them against what it read and changes
// (FindConflict), and tries the next version, or gives up with the conflict.
//
// One attempt's outcome is a value (AttemptResult: committed, conflicted or retryable);
// RunCommit loops over attempts. No threads, no clocks of its own: time and waiting come in
// through CommitClock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sluice/table/actions.h"
#include "sluice/table/log_store.h"
#include "sluice/table/predicate.h"
#include "sluice/table/table.h"
#include "table_state.h"

namespace sluice::table {

// What a transaction reads and changes: enough to tell whether a commit that won the race
// breaks it.
struct Transaction {
  // The version it planned against; -1 when it creates the table (it then holds protocol
  // and metaData and can only be version 0).
  int64_t read_version = -1;
  std::vector<Action> actions;  // everything but commitInfo
  CommitInfo info;              // operation, parameters, metrics; the rest is filled per attempt
  // Live files it depends on beyond those it removes (restore: all of them): a concurrent
  // removal of one is a conflict.
  std::set<std::string> read_files;
  // Files added concurrently (dataChange = true) that match this predicate conflict: the
  // transaction meant to replace or delete all of them (overwrite, delete, restore). None:
  // concurrent appends never conflict (blind appends, optimize).
  std::optional<FilePredicate> conflicting_appends;
  // When the version it commits at is a multiple of this (> 0) and the table cannot hold
  // V2 checkpoints yet, the commit also upgrades the protocol (docs/table.md, "Checkpoints").
  int64_t checkpoint_interval = 0;
};

enum class ConflictKind {
  kTableExists,             // a create lost: version 0 was written by another writer
  kMetadataChanged,         // a winner changed metaData (schema, partitioning, properties)
  kProtocolChanged,         // a winner raised the protocol beyond what sluice can write
  kConcurrentAppend,        // a winner added files this overwrite/delete/restore would cover
  kConcurrentDeleteDelete,  // a winner removed a file this transaction removes
  kConcurrentDeleteRead,    // a winner removed a file this transaction depends on
  kConcurrentTransaction,   // a winner committed the same txn appId
};
std::string_view ConflictKindName(ConflictKind kind);

struct Conflict {
  ConflictKind kind;
  std::string reason;  // names the winning commit file and the file or field
};

// Whether `winner` (commit `winner_version`, file `source`) breaks `txn`. Pure.
std::optional<Conflict> FindConflict(const Transaction& txn, const ParsedLogFile& winner,
                                     const std::string& source);

enum class CommitOutcome { kCommitted, kConflicted, kRetryable };

struct AttemptResult {
  CommitOutcome outcome = CommitOutcome::kRetryable;
  int64_t version = -1;              // committed: the version written
  std::optional<Conflict> conflict;  // conflicted
  Status error;                      // retryable after a storage error: the error
  bool duplicate = false;  // committed earlier: the txn (appId, version) was already there
};

struct CommitClock {
  std::function<int64_t()> now_ms;                     // wall clock, ms since the epoch
  std::function<void(int attempt)> wait_before_retry;  // after a storage error only
};

// One attempt at version state->version + 1. On a lost race the winners are applied to
// *state, so that the next attempt starts from them.
AttemptResult TryCommit(LogStore* store, const std::string& root, TableState* state,
                        const Transaction& txn, const std::string& attempt_id,
                        const CommitClock& clock);

// The storage errors worth another attempt (a dropped connection, throttling); any other
// error (permissions, a missing directory, a corrupt winning commit) ends the commit at once.
bool IsRetryableStorageError(const Status& status);

// Attempts until committed, conflicted (FailedPrecondition "commit conflict (<kind>): ...",
// and *conflict set when given), a storage error that is not retryable or persists past
// `max_storage_retries` retries in a row, or out of attempts (ResourceExhausted).
Result<CommitResult> RunCommit(LogStore* store, const std::string& root, TableState* state,
                               const Transaction& txn, int max_attempts, const CommitClock& clock,
                               std::optional<Conflict>* conflict = nullptr,
                               int max_storage_retries = 4);

// The commit file's text for `txn` at `version` (commitInfo first, then the actions).
std::string CommitText(const Transaction& txn, const TableState& state, int64_t version,
                       const std::string& attempt_id, int64_t now_ms);

}  // namespace sluice::table

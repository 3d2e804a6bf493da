// Writing checkpoints through the LogStore (the content is BuildCheckpoint's).
#include "checkpoint.h"
#include "log_path.h"
#include "log_reader.h"
#include "uuid.h"

namespace sluice::table {

Status WriteCheckpoint(LogStore* store, const std::string& root, const TableState& state,
                       int64_t now_ms) {
  if (!state.protocol.has_value() || !state.protocol->HasReaderFeature(kV2CheckpointFeature)) {
    return FailedPrecondition(root + ": version " + std::to_string(state.version) +
                              " cannot hold a V2 checkpoint (no v2Checkpoint table feature)");
  }
  const std::string log_dir = LogDir(root);
  CheckpointContent content =
      BuildCheckpoint(state, now_ms - DeletedFileRetentionMs(*state.metadata));
  const std::string name = UuidCheckpointFileName(state.version, NewUuid());
  SLUICE_RETURN_IF_ERROR(store->PutIfAbsent(log_dir + "/" + name, content.text));
  // _last_checkpoint is a hint: a lost race leaves it one checkpoint behind, which only
  // costs a reader a few more commits.
  const std::string hint_path = log_dir + "/" + std::string(kLastCheckpointName);
  Result<std::string> current = store->Read(hint_path);
  if (current.ok()) {
    std::optional<LastCheckpointHint> old = ParseLastCheckpoint(*current);
    if (old.has_value() && old->version >= state.version) return Status::OK();
  }
  LastCheckpointHint hint;
  hint.version = state.version;
  hint.size = content.actions;
  hint.size_in_bytes = static_cast<int64_t>(content.text.size());
  hint.num_of_add_files = content.adds;
  hint.file = name;
  return store->Put(hint_path, SerializeLastCheckpoint(hint));
}

}  // namespace sluice::table

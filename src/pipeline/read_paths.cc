// Dataset::Read: resolves the user's paths (shard files, dataset directories, globs) with
// format::ResolveShards, tables with table::ResolveTableRead (one version's files), and opens
// them as a ShardSource (through the node-local cache when it is on: cache_hooks.h).
#include <string>
#include <vector>

#include "cache_hooks.h"
#include "forwarding_source.h"
#include "sluice/format/manifest.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/table/table.h"

namespace sluice::pipeline {
namespace {

// A table's log states each file's record count: a shard that disagrees is not that file.
Status CheckTableRecords(const table::TableSelection& t, const RecordSource& source,
                         size_t first_shard) {
  for (size_t i = 0; i < t.files.size(); ++i) {
    uint64_t actual = source.shard_records()[first_shard + i];
    if (t.records[i] >= 0 && static_cast<uint64_t>(t.records[i]) != actual) {
      return DataLoss("table " + t.root + " version " + std::to_string(t.version) + ": " +
                      t.files[i] + " holds " + std::to_string(actual) + " records, the log says " +
                      std::to_string(t.records[i]));
    }
  }
  return Status::OK();
}

// The shards of table versions (and maybe other paths), identified in iterator states by the
// tables' versions as well as by their content: a state saved on version 1 is refused on
// version 3, naming both, even where the two versions hold the same files (source.h: "a
// dataset pinned to a table version supplies the table's own identity").
class TableVersionSource final : public ForwardingSource {
 public:
  TableVersionSource(std::shared_ptr<RecordSource> shards,
                     const std::vector<std::pair<table::TableSelection, size_t>>& tables)
      : ForwardingSource(std::move(shards)), identity_(inner().snapshot()) {
    std::string tables_named;
    for (const auto& [t, first] : tables) {
      identity_.fingerprint =
          HashBytes(identity_.fingerprint, "table version " + std::to_string(t.version));
      if (!tables_named.empty()) tables_named += " + ";
      // The version first: saved descriptions are cut to a few hundred bytes.
      tables_named += "version " + std::to_string(t.version) + " of table " + t.root;
    }
    identity_.description = tables_named + ": " + identity_.description;
  }
  SnapshotIdentity snapshot() const override { return identity_; }

 private:
  SnapshotIdentity identity_;
};

}  // namespace

Result<Dataset> Dataset::Read(const ReadOptions& options) {
  if (options.paths.empty()) return InvalidArgument("read: no paths");
  io::FileSystem* fs = options.fs;
  std::vector<format::ResolvedDataset> datasets;
  std::vector<std::string> shards;
  // shard -> (dataset, position in it); kNoManifest for a table's shards (the log checks them)
  constexpr size_t kNoManifest = SIZE_MAX;
  std::vector<std::pair<size_t, size_t>> origin;
  std::vector<std::pair<table::TableSelection, size_t>> tables;  // and their first shard
  std::vector<io::FileInfo> listed;  // the directories' listings (remote storage)
  table::OpenOptions version;
  version.version = options.table_version;
  version.timestamp_ms = options.table_timestamp_ms;
  for (const std::string& path : options.paths) {
    std::string local = path;
    if (options.fs == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(io::FileSystem * path_fs, io::FileSystemFor(path, &local));
      if (fs != nullptr && path_fs != fs) {
        return InvalidArgument("read: all paths must be on one file system (" + path + ")");
      }
      fs = path_fs;
    }
    SLUICE_ASSIGN_OR_RETURN(auto table, table::ResolveTableRead(fs, local, version));
    if (table.has_value()) {
      tables.emplace_back(*table, shards.size());
      shards.insert(shards.end(), table->files.begin(), table->files.end());
      origin.resize(shards.size(), {kNoManifest, 0});
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(format::ResolvedDataset found, format::ResolveDataset(fs, local));
    for (size_t i = 0; i < found.shards.size(); ++i) {
      shards.push_back(found.shards[i]);
      origin.emplace_back(datasets.size(), i);
    }
    listed.insert(listed.end(), std::make_move_iterator(found.listing.begin()),
                  std::make_move_iterator(found.listing.end()));
    found.listing.clear();
    datasets.push_back(std::move(found));
  }
  if (tables.empty() && (options.table_version || options.table_timestamp_ms)) {
    return InvalidArgument("read: a table version or timestamp was given, but no path is a table");
  }
  format::ShardReaderOptions ro;
  ro.verify_crc = options.verify_crc;
  ro.map_uncompressed = options.map_uncompressed;
  ro.chunk_bytes = options.chunk_bytes;
  // Unless this read raises, a damaged shard is recovered here and the policy the iterator
  // runs with decides at its start (PipelineContext::OnSourceDamage): raise fails there, with
  // the error an open would have given; skip and quarantine keep the intact records.
  if (options.on_error != ErrorPolicy::kRaise) ro.on_damage = format::ShardDamagePolicy::kRecover;
  // A shard that disagrees with its manifest fails the open under on_error = raise; under
  // skip or quarantine the shard is read for what it holds (its records are still checked).
  ShardCheck check;
  if (options.on_error.value_or(ErrorPolicy::kRaise) == ErrorPolicy::kRaise) {
    check = [&](size_t shard, const format::ShardReader& reader) {
      const auto& [dataset, i] = origin[shard];
      if (dataset == kNoManifest) return Status::OK();
      return format::CheckShardMatchesManifest(datasets[dataset], i, reader.file_bytes(),
                                               reader.num_records());
    };
  }
  ReadOptions o = options;
  SLUICE_ASSIGN_OR_RETURN(o.fs, CachedFileSystemFor(fs, options));
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RecordSource> source,
                          OpenShardSource(o.fs, shards, ro, check, listed));
  for (const auto& [t, first] : tables)
    SLUICE_RETURN_IF_ERROR(CheckTableRecords(t, *source, first));
  if (!tables.empty()) source = std::make_shared<TableVersionSource>(std::move(source), tables);
  return FromSource(std::move(source), o);
}

}  // namespace sluice::pipeline

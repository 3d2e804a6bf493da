// Dataset::Read: resolves the user's paths (shard files, dataset directories, globs) with
// format::ResolveShards, tables with table::ResolveTableRead (one version's files), and opens
// them as a ShardSource.
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

}  // namespace

Result<Dataset> Dataset::Read(const ReadOptions& options) {
  if (options.paths.empty()) return InvalidArgument("read: no paths");
  io::FileSystem* fs = options.fs;
  std::vector<std::string> shards;
  std::vector<std::pair<table::TableSelection, size_t>> tables;  // and their first shard
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
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> found, format::ResolveShards(fs, local));
    shards.insert(shards.end(), found.begin(), found.end());
  }
  if (tables.empty() && (options.table_version || options.table_timestamp_ms)) {
    return InvalidArgument("read: a table version or timestamp was given, but no path is a table");
  }
  format::ShardReaderOptions ro;
  ro.verify_crc = options.verify_crc;
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RecordSource> source, OpenShardSource(fs, shards, ro));
  for (const auto& [t, first] : tables)
    SLUICE_RETURN_IF_ERROR(CheckTableRecords(t, *source, first));
  return FromSource(std::move(source), options);
}

}  // namespace sluice::pipeline

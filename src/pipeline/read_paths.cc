// Dataset::Read: resolves the user's paths (shard files, dataset directories, globs) with
// format::ResolveShards and opens them as a ShardSource.
#include "sluice/format/manifest.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::pipeline {

Result<Dataset> Dataset::Read(const ReadOptions& options) {
  if (options.paths.empty()) return InvalidArgument("read: no paths");
  io::FileSystem* fs = options.fs;
  std::vector<format::ResolvedDataset> datasets;
  std::vector<std::string> shards;
  std::vector<std::pair<size_t, size_t>> origin;  // shard -> (dataset, position in it)
  for (const std::string& path : options.paths) {
    std::string local = path;
    if (options.fs == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(io::FileSystem * path_fs, io::FileSystemFor(path, &local));
      if (fs != nullptr && path_fs != fs) {
        return InvalidArgument("read: all paths must be on one file system (" + path + ")");
      }
      fs = path_fs;
    }
    SLUICE_ASSIGN_OR_RETURN(format::ResolvedDataset found, format::ResolveDataset(fs, local));
    for (size_t i = 0; i < found.shards.size(); ++i) {
      shards.push_back(found.shards[i]);
      origin.emplace_back(datasets.size(), i);
    }
    datasets.push_back(std::move(found));
  }
  format::ShardReaderOptions ro;
  ro.verify_crc = options.verify_crc;
  ro.map_uncompressed = options.map_uncompressed;
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
      return format::CheckShardMatchesManifest(datasets[dataset], i, reader.file_bytes(),
                                               reader.num_records());
    };
  }
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RecordSource> source,
                          OpenShardSource(fs, shards, ro, check));
  return FromSource(std::move(source), options);
}

}  // namespace sluice::pipeline

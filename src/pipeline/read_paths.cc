// Dataset::Read: resolves the user's paths (shard files, dataset directories, globs) with
// format::ResolveShards and opens them as a ShardSource.
#include "sluice/format/manifest.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::pipeline {

Result<Dataset> Dataset::Read(const ReadOptions& options) {
  if (options.paths.empty()) return InvalidArgument("read: no paths");
  io::FileSystem* fs = options.fs;
  std::vector<std::string> shards;
  for (const std::string& path : options.paths) {
    std::string local = path;
    if (options.fs == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(io::FileSystem * path_fs, io::FileSystemFor(path, &local));
      if (fs != nullptr && path_fs != fs) {
        return InvalidArgument("read: all paths must be on one file system (" + path + ")");
      }
      fs = path_fs;
    }
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> found, format::ResolveShards(fs, local));
    shards.insert(shards.end(), found.begin(), found.end());
  }
  format::ShardReaderOptions ro;
  ro.verify_crc = options.verify_crc;
  ro.chunk_bytes = options.chunk_bytes;
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RecordSource> source, OpenShardSource(fs, shards, ro));
  return FromSource(std::move(source), options);
}

}  // namespace sluice::pipeline

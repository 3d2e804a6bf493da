// The pipeline's side of the node-local cache (docs/cache.md): Dataset::Read wraps the file
// system in the cache when ReadOptions ask for it, the iterator reports the cache's figures,
// and (with the chunk-aware order) the read stage announces the node's future reads.
#pragma once

#include "nodes.h"
#include "sluice/io/cache/cache.h"
#include "sluice/pipeline/read.h"

namespace sluice::pipeline {

// `fs` itself, or the cached view of it when `options` turn the cache on (ReadOptions::cache:
// by default on for remote file systems, off for local ones unless cache_dir is set).
Result<io::FileSystem*> CachedFileSystemFor(io::FileSystem* fs, const ReadOptions& options);

// The cache the pipeline's source reads through, or null.
io::cache::Cache* SourceCache(const DatasetNode* root);

}  // namespace sluice::pipeline

#include "cache_hooks.h"

#include "sluice/io/cache/cached_file_system.h"

namespace sluice::pipeline {

Result<io::FileSystem*> CachedFileSystemFor(io::FileSystem* fs, const ReadOptions& options) {
  const bool remote = fs->name() != "local" && fs->name() != "memory";
  if (!options.cache.value_or(remote || !options.cache_dir.empty())) return fs;
  io::cache::CacheOptions co;
  co.dir = options.cache_dir;
  co.capacity_bytes = options.cache_bytes;
  return io::cache::CachedFileSystemFor(fs, co);
}

io::cache::Cache* SourceCache(const DatasetNode* root) {
  const DatasetNode* node = root;
  while (node->input() != nullptr) node = node->input();
  const SourceConfig* source = AsReadNode(node);
  if (source == nullptr) return nullptr;
  auto* cached = dynamic_cast<io::cache::CachedFileSystem*>(source->read.fs);
  return cached == nullptr ? nullptr : cached->cache();
}

}  // namespace sluice::pipeline

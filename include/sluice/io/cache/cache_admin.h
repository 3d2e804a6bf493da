// Looking after a cache directory from outside a job (`sluice cache stats|clear|warm`,
// docs/cache.md "Operations").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::io::cache {

// What a cache directory holds, read without changing it.
struct CacheSummary {
  std::string dir;
  uint64_t capacity_bytes = 0;  // the ledger's
  uint64_t used_bytes = 0;      // the ledger's
  uint64_t chunks = 0;          // published chunk files found
  uint64_t chunk_bytes = 0;     // their bytes (equals used_bytes unless a process is mid-update)
  uint64_t temporaries = 0;     // chunks being written, or left by crashes
  uint64_t temporary_bytes = 0;
  uint64_t free_disk_bytes = 0;  // on the file system holding the directory
  struct File {
    std::string identity;  // "<file system>:<path>#<size>" (docs/cache.md, "Keys")
    uint64_t chunks = 0;
    uint64_t bytes = 0;
  };
  std::vector<File> files;  // with by_file: chunks per remote file, most bytes first
  uint64_t unreadable = 0;  // with by_file: chunk files whose header does not parse
};

// NotFound when `dir` holds no cache. With `by_file`, reads every chunk's header.
Result<CacheSummary> SummarizeCache(const std::string& dir, bool by_file);

// Reads `paths` of `fs` (a CachedFileSystem) from start to end in its chunks, `parallel` reads
// at a time, and waits until they are stored: what `sluice cache warm` does for files the
// order has no chunk table for.
Status WarmFiles(FileSystem* fs, const std::vector<std::string>& paths, uint32_t parallel);

}  // namespace sluice::io::cache

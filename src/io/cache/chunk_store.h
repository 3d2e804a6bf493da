// ChunkStore: the cache's page store. It only moves bytes between memory and chunk files in
// one directory (docs/cache.md, "Directory layout"): write a complete file under a temporary
// name, rename it into place, read a verified range, delete, scan. It keeps no state besides
// the directory's path, knows nothing of capacity, locks or policies (the coordinator does),
// and every method is safe to call from many threads and processes at once.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/io/cache/eviction.h"

namespace sluice::io::cache {

struct StoredChunk {
  ChunkId id;
  uint64_t file_bytes = 0;  // header + payload
  int64_t mtime_ns = 0;
};

struct StagedChunk {
  ChunkId id;
  std::string temp_path;
  uint64_t file_bytes = 0;
};

struct ChunkStoreOptions {
  bool sync = false;  // fsync a chunk before publishing it. Default: false (a chunk lost or
                      // torn by a power cut fails its CRC and is fetched again)
};

class ChunkStore {
 public:
  ChunkStore(std::string dir, ChunkStoreOptions options = {});
  const std::string& dir() const { return dir_; }
  std::string PathOf(const ChunkId& id) const;
  Status Init() const;  // creates the directory

  // Writes the whole chunk file (header and payload) under a temporary name next to its final
  // one. The caller publishes or discards it.
  Result<StagedChunk> Stage(const ChunkId& id, std::string_view key, ByteView payload) const;
  // Renames a staged file into place: readers see no file or the whole chunk.
  Status Publish(const StagedChunk& staged) const;
  void Discard(const StagedChunk& staged) const;

  // Bytes [begin, begin + n) of the payload of the chunk `id`, which must hold `key` and
  // `length` bytes; the header and every page read are checked. NotFound when there is no
  // such file, DataLoss (naming the file and offset) when it is damaged or torn.
  // `buffer` (if set) gives the string the pages are read into (IoContext::buffer).
  Result<std::string> Read(const ChunkId& id, std::string_view key, uint64_t length, uint64_t begin,
                           uint64_t n,
                           const std::function<std::string(size_t)>& buffer = nullptr) const;
  // The size of the chunk's file; NotFound when absent.
  Result<uint64_t> FileBytes(const ChunkId& id) const;
  // Removes the chunk's file; the bytes freed (0 when it was not there). Readers that opened
  // it before keep reading the complete old file.
  Result<uint64_t> Delete(const ChunkId& id) const;
  // Every published chunk file. With `remove_stale_temps`, removes temporary files of
  // processes that no longer run (a crash mid-write) or older than a day.
  Result<std::vector<StoredChunk>> Scan(bool remove_stale_temps) const;
  // Temporary files (chunks being written, or left by crashes): how many, and their bytes.
  Result<std::pair<uint64_t, uint64_t>> Temporaries() const;
  // The key stored in a chunk file's header, read without knowing it (listing tools).
  Result<std::string> KeyOf(const ChunkId& id) const;

 private:
  // Calls `visit(name, path, stat)` for every regular file in the chunk folders.
  Status ForEachFile(const std::function<void(std::string_view, const std::string&,
                                              const struct stat&)>& visit) const;

  std::string dir_;
  ChunkStoreOptions options_;
};

}  // namespace sluice::io::cache

#include "sluice/io/cache/cache_admin.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "chunk_store.h"
#include "ledger.h"
#include "sluice/io/cache/cached_file_system.h"

namespace sluice::io::cache {

Result<CacheSummary> SummarizeCache(const std::string& dir, bool by_file) {
  struct stat st;
  if (::stat((dir + "/ledger").c_str(), &st) != 0) {
    return NotFound("no sluice cache in " + dir + " (no ledger file)");
  }
  CacheSummary s;
  s.dir = dir;
  ChunkStore store(dir + "/chunks");
  std::vector<StoredChunk> chunks;
  {
    // Under the ledger's lock the directory does not change: one instant's figures.
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Ledger> ledger, Ledger::Open(dir + "/ledger"));
    SLUICE_ASSIGN_OR_RETURN(LedgerLock lock, ledger->Lock());
    s.capacity_bytes = lock.state().capacity;
    s.used_bytes = lock.state().used;
    SLUICE_ASSIGN_OR_RETURN(chunks, store.Scan(false));
    SLUICE_ASSIGN_OR_RETURN(auto temps, store.Temporaries());
    s.temporaries = temps.first;
    s.temporary_bytes = temps.second;
  }
  s.chunks = chunks.size();
  for (const StoredChunk& c : chunks) s.chunk_bytes += c.file_bytes;
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) == 0) s.free_disk_bytes = uint64_t{fs.f_bavail} * fs.f_frsize;
  if (!by_file) return s;
  std::map<std::string, CacheSummary::File> files;
  for (const StoredChunk& c : chunks) {
    Result<std::string> key = store.KeyOf(c.id);
    if (!key.ok()) {
      ++s.unreadable;  // evicted meanwhile, or damaged
      continue;
    }
    std::string identity = key->substr(0, key->rfind('@'));
    CacheSummary::File& f = files[identity];
    f.identity = identity;
    ++f.chunks;
    f.bytes += c.file_bytes;
  }
  for (auto& [identity, f] : files) s.files.push_back(std::move(f));
  std::sort(s.files.begin(), s.files.end(),
            [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return s;
}

Status WarmFiles(FileSystem* fs, const std::vector<std::string>& paths, uint32_t parallel) {
  auto* cached = dynamic_cast<CachedFileSystem*>(fs);
  if (cached == nullptr) return InvalidArgument("warm: not a cached file system");
  const uint64_t block = cached->cache()->options().block_bytes;
  std::mutex mu;
  std::condition_variable cv;
  uint32_t in_flight = 0;
  Status first;
  for (const std::string& path : paths) {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessFile> file, fs->OpenForRead(path));
    for (uint64_t at = 0; at < file->size(); at += block) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < std::max<uint32_t>(1, parallel); });
      if (!first.ok()) break;
      ++in_flight;
      lock.unlock();
      file->ReadAsync(at, block, [&, file](Result<std::string> got) {
        std::lock_guard<std::mutex> lock(mu);
        if (!got.ok() && first.ok()) first = got.status();
        --in_flight;
        cv.notify_all();
      });
    }
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  cached->cache()->Drain();
  return first;
}

}  // namespace sluice::io::cache

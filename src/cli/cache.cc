// `sluice cache stats|clear|warm`: look after a node-local cache directory (docs/cache.md).
#include "sluice/io/cache/cache.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "sluice/base/bytes.h"
#include "sluice/format/manifest.h"
#include "sluice/io/cache/cache_admin.h"
#include "sluice/io/cache/cached_file_system.h"

namespace sluice::cli {
namespace {

struct CacheCommandOptions {
  std::string dir;    // Default: io::cache::DefaultCacheDir()
  std::string bytes;  // warm: Default: the directory's capacity
  std::vector<std::string> paths;
  uint32_t parallel = 16;  // warm: reads in flight
  bool json = false;
  bool files = false;
};

std::string DirOf(const CacheCommandOptions& o) {
  return o.dir.empty() ? io::cache::DefaultCacheDir() : o.dir;
}

Status Stats(const CacheCommandOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(io::cache::CacheSummary s, io::cache::SummarizeCache(DirOf(o), o.files));
  if (o.json) {
    nlohmann::json j = {{"dir", s.dir},
                        {"capacity_bytes", s.capacity_bytes},
                        {"used_bytes", s.used_bytes},
                        {"chunks", s.chunks},
                        {"chunk_bytes", s.chunk_bytes},
                        {"temporaries", s.temporaries},
                        {"temporary_bytes", s.temporary_bytes},
                        {"free_disk_bytes", s.free_disk_bytes}};
    if (o.files) {
      j["files"] = nlohmann::json::array();
      for (const auto& f : s.files) {
        j["files"].push_back({{"file", f.identity}, {"chunks", f.chunks}, {"bytes", f.bytes}});
      }
      j["unreadable"] = s.unreadable;
    }
    fmt::print("{}\n", j.dump());
    return Status::OK();
  }
  fmt::print("cache {}\n", s.dir);
  fmt::print("  used      {} of {} ({} chunks)\n", FormatByteSize(s.used_bytes),
             FormatByteSize(s.capacity_bytes), s.chunks);
  fmt::print("  writing   {} temporary files, {}\n", s.temporaries,
             FormatByteSize(s.temporary_bytes));
  fmt::print("  disk free {}\n", FormatByteSize(s.free_disk_bytes));
  for (const auto& f : s.files) {
    fmt::print("  {:>10}  {:>6} chunks  {}\n", FormatByteSize(f.bytes), f.chunks, f.identity);
  }
  if (s.unreadable > 0) fmt::print("  {} chunk files could not be read\n", s.unreadable);
  return Status::OK();
}

Status Clear(const CacheCommandOptions& o) {
  const std::string dir = DirOf(o);
  SLUICE_ASSIGN_OR_RETURN(io::cache::CacheSummary before, io::cache::SummarizeCache(dir, false));
  io::cache::CacheOptions co;
  co.dir = dir;
  SLUICE_ASSIGN_OR_RETURN(auto cache, io::cache::Cache::Open(co));
  SLUICE_RETURN_IF_ERROR(cache->Clear());
  fmt::print("cache {}: cleared {} chunks, {}\n", dir, before.chunks,
             FormatByteSize(before.chunk_bytes));
  return Status::OK();
}

Status Warm(const CacheCommandOptions& o) {
  io::cache::CacheOptions co;
  co.dir = DirOf(o);
  if (!o.bytes.empty() && !ParseByteSize(o.bytes, &co.capacity_bytes)) {
    return InvalidArgument("--cache-bytes: not a size: " + o.bytes);
  }
  std::vector<std::string> files;
  io::FileSystem* remote = nullptr;
  for (const std::string& uri : o.paths) {
    SLUICE_ASSIGN_OR_RETURN(Location where, Locate(uri));
    if (remote != nullptr && where.fs != remote) {
      return InvalidArgument("warm: all paths must be on one file system (" + uri + ")");
    }
    remote = where.fs;
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> shards,
                            format::ResolveShards(where.fs, where.path));
    for (const std::string& shard : shards) {
      files.push_back(shard);
      std::string index = shard + ".idx";
      if (where.fs->Exists(index)) files.push_back(index);
    }
  }
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * cached, io::cache::CachedFileSystemFor(remote, co));
  auto* cache = static_cast<io::cache::CachedFileSystem*>(cached)->cache();
  SLUICE_RETURN_IF_ERROR(cache->bypassed());  // a directory that cannot be warmed
  SLUICE_RETURN_IF_ERROR(io::cache::WarmFiles(cached, files, o.parallel));
  io::cache::CacheStats s = cache->stats();
  fmt::print("cache {}: {} files, fetched {}, {} already cached; {} of {} used\n", cache->dir(),
             files.size(), FormatByteSize(s.fetched_bytes), s.hits, FormatByteSize(s.used_bytes),
             FormatByteSize(s.capacity_bytes));
  if (s.skipped > 0 || s.evictions > 0) {
    Warn(fmt::format(
        "the files do not fit in the cache: {} chunks evicted to make room, {} not kept",
        s.evictions, s.skipped));
  }
  return Status::OK();
}

void AddDirOption(CLI::App* cmd, CacheCommandOptions* o) {
  cmd->add_option("--cache-dir", o->dir,
                  "Cache directory (default: $XDG_CACHE_HOME/sluice or ~/.cache/sluice)");
}

}  // namespace

void AddCacheCommand(CLI::App* cache, int* exit_code) {
  auto o = std::make_shared<CacheCommandOptions>();
  cache->require_subcommand(1);
  auto run = [o, exit_code](Status (*command)(const CacheCommandOptions&)) {
    return [o, exit_code, command] {
      Status s = command(*o);
      *exit_code = s.ok() ? kExitOk : ReportError(s);
    };
  };

  CLI::App* stats = cache->add_subcommand("stats", "Capacity, use and contents of a cache");
  AddDirOption(stats, o.get());
  stats->add_flag("--json", o->json, "One JSON object");
  stats->add_flag("--files", o->files, "Bytes cached per remote file (reads every chunk header)");
  stats->callback(run(Stats));

  CLI::App* clear = cache->add_subcommand("clear", "Delete every chunk (all processes)");
  AddDirOption(clear, o.get());
  clear->callback(run(Clear));

  CLI::App* warm = cache->add_subcommand("warm", "Fetch a dataset's shards into the cache");
  AddDirOption(warm, o.get());
  warm->add_option("PATH", o->paths, "Datasets (directory, shard files or globs)")->required();
  warm->add_option("--cache-bytes", o->bytes, "Capacity (default: the directory's)")
      ->check(ByteSizeValidator());
  warm->add_option("--parallel", o->parallel, "Reads in flight (default: 16)");
  warm->callback(run(Warm));
}

}  // namespace sluice::cli

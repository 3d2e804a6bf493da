#include "sluice/dist/locality.h"

#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "dist/wire.h"
#include "sluice/dist/input_split.h"
#include "sluice/io/cache/cache.h"
#include "sluice/io/cache/cache_admin.h"
#include "sluice/io/cache/cached_file_system.h"

namespace sluice::dist {

void AddHostsFromNodes(const std::vector<NodeHoldings>& nodes, const LocalityOptions& options,
                       std::vector<TaskSpec>* tasks) {
  std::set<std::string> all_hosts;
  for (const auto& n : nodes) all_hosts.insert(n.host);
  for (TaskSpec& task : *tasks) {
    const size_t i = task.id;
    std::set<std::string> local;           // nodes with the file on their own disk
    std::map<std::string, double> cached;  // node -> largest fraction reported
    for (const auto& n : nodes) {
      if (i < n.local_file.size() && n.local_file[i]) local.insert(n.host);
      if (i < n.cached_fraction.size() && n.cached_fraction[i] >= options.cache_fraction &&
          n.cached_fraction[i] > 0) {
        double& f = cached[n.host];
        f = std::max(f, n.cached_fraction[i]);
      }
    }
    if (!local.empty() && local != all_hosts) {
      // No other node can read it: a preference would be a failure waiting for the wait.
      task.hosts.assign(local.begin(), local.end());
      task.only_on_hosts = true;
      continue;
    }
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [host, f] : cached) ranked.emplace_back(-f, host);
    std::sort(ranked.begin(), ranked.end());  // most held first, then by name
    for (const auto& [f, host] : ranked) {
      if (std::find(task.hosts.begin(), task.hosts.end(), host) == task.hosts.end()) {
        task.hosts.push_back(host);
      }
    }
  }
}

bool IsNodeLocalFile(const std::string& path, const std::vector<std::string>& local_dirs) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  for (const auto& dir : local_dirs) {
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (path.size() > d.size() && path.compare(0, d.size(), d) == 0 && path[d.size()] == '/') {
      return true;
    }
  }
  struct statfs fs;
  if (::statfs(path.c_str(), &fs) != 0) return false;
  // Shared (network or cluster) file systems, by their statfs magic (linux/magic.h and the
  // file systems' own headers): every node sees the same file there.
  static constexpr uint64_t kShared[] = {
      0x6969,      // NFS
      0x517B,      // SMB
      0xFF534D42,  // CIFS
      0xFE534D42,  // SMB2
      0x0BD00BD0,  // Lustre
      0x47504653,  // GPFS
      0x00C36400,  // CephFS
      0x19830326,  // BeeGFS
      0x5346414F,  // AFS
      0x01021997,  // 9p
      0x65735546,  // FUSE (sshfs, GlusterFS, s3fs...: unknown, so assumed shared)
      0x20030528,  // OrangeFS / PVFS2
  };
  const auto type = static_cast<uint64_t>(static_cast<uint32_t>(fs.f_type));
  return std::find(std::begin(kShared), std::end(kShared), type) == std::end(kShared);
}

TaskFile LocalFileOfFileTask(const TaskSpec& task) {
  Result<FileRange> range = FileRange::Decode(task.input);
  if (!range.ok() || range->path.find("://") != std::string::npos) return {};
  return TaskFile{range->path, 0};
}

namespace {

// What this node holds of `files`: its cache's holdings, and node-local files (for files of
// the local file system only).
NodeHoldings HoldingsHere(const std::string& host, std::string_view fs_name,
                          const std::vector<TaskFile>& files, const LocalityOptions& options) {
  NodeHoldings h;
  h.host = host;
  h.cached_fraction.assign(files.size(), 0);
  h.local_file.assign(files.size(), false);
  const std::string dir =
      options.cache_dir.empty() ? io::cache::DefaultCacheDir() : options.cache_dir;
  // Reading the holdings reads every chunk's header: only when some file could be looked up.
  const bool sized = std::any_of(files.begin(), files.end(),
                                 [](const TaskFile& f) { return !f.path.empty() && f.bytes > 0; });
  auto summary = sized ? io::cache::SummarizeCache(dir, /*by_file=*/true)
                       : Result<io::cache::CacheSummary>(NotFound("not looked up"));
  std::map<std::string, uint64_t> held;
  if (summary.ok()) {
    for (const auto& f : summary->files) held[f.identity] = f.bytes;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const TaskFile& f = files[i];
    if (f.path.empty()) continue;
    if (!held.empty() && f.bytes > 0) {
      auto it = held.find(io::cache::FileIdentity(fs_name, f.path, f.bytes));
      if (it != held.end()) {
        h.cached_fraction[i] =
            std::min(1.0, static_cast<double>(it->second) / static_cast<double>(f.bytes));
      }
    }
    if (fs_name == "local") h.local_file[i] = IsNodeLocalFile(f.path, options.local_input_dirs);
  }
  return h;
}

}  // namespace

Status GatherNodeLocality(Transport* t, std::string_view fs_name,
                          const std::function<TaskFile(const TaskSpec&)>& file_of,
                          const LocalityOptions& options, std::vector<TaskSpec>* tasks) {
  SLUICE_ASSIGN_OR_RETURN(auto hosts, t->AllGather(ByteView(t->host())));
  // On one node every rank is as near to every input: nothing to learn (and no cache to scan).
  if (std::all_of(hosts.begin(), hosts.end(), [&](const auto& h) { return h == hosts[0]; })) {
    return Status::OK();
  }
  std::string plan;
  if (t->rank() == 0) {
    WireWriter w;
    w.U64(tasks->size());
    for (const TaskSpec& task : *tasks) {
      TaskFile f = file_of(task);
      w.Bytes(f.path).U64(f.bytes);
    }
    plan = w.Take();
  }
  SLUICE_ASSIGN_OR_RETURN(plan, t->Broadcast(std::move(plan), 0));
  WireReader in(plan);
  uint64_t n = 0;
  if (!in.U64(&n)) return Internal("locality: a truncated task list");
  std::vector<TaskFile> files(n);
  for (auto& f : files) {
    if (!in.Bytes(&f.path) || !in.U64(&f.bytes)) return Internal("locality: a truncated task list");
  }
  // One report per node, from its lowest rank.
  const bool first_here =
      std::find(hosts.begin(), hosts.end(), t->host()) - hosts.begin() == t->rank();
  std::string report;
  if (first_here) {
    NodeHoldings h = HoldingsHere(t->host(), fs_name, files, options);
    WireWriter w;
    w.Bytes(h.host);
    for (size_t i = 0; i < files.size(); ++i) {
      auto ppm = static_cast<uint64_t>(std::lround(h.cached_fraction[i] * 1e6));
      if (ppm == 0 && !h.local_file[i]) continue;
      w.U64(i).U64(ppm).U64(h.local_file[i] ? 1 : 0);
    }
    report = w.Take();
  }
  SLUICE_ASSIGN_OR_RETURN(auto reports, t->AllGather(ByteView(report)));
  if (t->rank() != 0) return Status::OK();
  std::vector<NodeHoldings> nodes;
  for (const std::string& r : reports) {
    if (r.empty()) continue;
    WireReader rin(r);
    NodeHoldings h;
    if (!rin.Bytes(&h.host)) return Internal("locality: a truncated report");
    h.cached_fraction.assign(n, 0);
    h.local_file.assign(n, false);
    uint64_t i = 0, ppm = 0, local = 0;
    while (rin.U64(&i) && rin.U64(&ppm) && rin.U64(&local) && i < n) {
      h.cached_fraction[i] = static_cast<double>(ppm) / 1e6;
      h.local_file[i] = local != 0;
    }
    nodes.push_back(std::move(h));
  }
  AddHostsFromNodes(nodes, options, tasks);
  return Status::OK();
}

}  // namespace sluice::dist

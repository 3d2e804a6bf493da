#include "log_segment.h"

#include <algorithm>
#include <map>

namespace sluice::table {
namespace {

bool Skipped(const std::vector<std::string>& skip, const std::string& name) {
  return std::find(skip.begin(), skip.end(), name) != skip.end();
}

}  // namespace

Result<LogSegment> BuildLogSegment(const std::vector<LogEntry>& listing,
                                   std::optional<int64_t> target, const std::string& log_dir,
                                   const std::vector<std::string>& skip) {
  std::map<int64_t, const LogEntry*> commits;
  std::map<int64_t, const LogEntry*> readable;  // newest JSON checkpoint per version
  std::map<int64_t, const LogEntry*> parquet;   // checkpoints sluice cannot read
  for (const LogEntry& e : listing) {
    const LogPath& p = e.path;
    if (p.kind == LogFileKind::kCommit) commits[p.version] = &e;
    if (!p.is_checkpoint() || Skipped(skip, p.name)) continue;
    if (p.kind == LogFileKind::kUuidCheckpoint && p.json) {
      auto& slot = readable[p.version];
      if (slot == nullptr || slot->path.name < p.name) slot = &e;  // greatest name wins
    } else {
      parquet[p.version] = &e;
    }
  }
  if (commits.empty() && readable.empty()) {
    return NotFound(log_dir + ": no commits (not a Delta table)");
  }
  int64_t latest = std::max(commits.empty() ? -1 : commits.rbegin()->first,
                            readable.empty() ? -1 : readable.rbegin()->first);
  int64_t version = target.value_or(latest);
  if (version < 0 || version > latest) {
    return NotFound("version " + std::to_string(version) + " does not exist (the latest is " +
                    std::to_string(latest) + ")");
  }
  LogSegment seg;
  seg.version = version;
  auto cp = readable.upper_bound(version);
  int64_t first = 0;
  if (cp != readable.begin()) {
    --cp;
    seg.checkpoint = *cp->second;
    first = cp->first + 1;
  }
  if (!seg.checkpoint.has_value() && commits.count(0) == 0) {
    auto pq = parquet.upper_bound(version);
    if (pq != parquet.begin()) {
      --pq;
      return Unimplemented("version " + std::to_string(version) + " can only be read through " +
                           log_dir + "/" + pq->second->path.name +
                           ", a Parquet checkpoint, which sluice cannot read (no Parquet "
                           "library is packaged); the commits before it were cleaned up");
    }
    int64_t earliest = commits.empty() ? 0 : commits.begin()->first;
    return NotFound("version " + std::to_string(version) +
                    " is no longer in the log: its "
                    "commits start at version " +
                    std::to_string(earliest) + " and no checkpoint covers the earlier ones");
  }
  for (int64_t v = first; v <= version; ++v) {
    auto it = commits.find(v);
    if (it == commits.end()) {
      return DataLoss(log_dir + "/" + CommitFileName(v) + " is missing: the log jumps from " +
                      "version " + std::to_string(v - 1) + " to a later one (a gap in the " +
                      "versions; the table cannot be read at version " + std::to_string(version) +
                      ")");
    }
    seg.commits.push_back(*it->second);
  }
  return seg;
}

}  // namespace sluice::table

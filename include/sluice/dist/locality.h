// Where tasks' inputs are, beyond HDFS block locations (map_phase.h PreferredHosts): the
// nodes whose cache tier holds most of a task's input file, and the nodes that have the file
// on a node-local disk (docs/dist.md, "Locality"). Each node reports what it holds; rank 0
// turns the reports into TaskSpec::hosts, which the scheduler's delay scheduling prefers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/policies.h"
#include "sluice/dist/task.h"
#include "sluice/dist/transport.h"

namespace sluice::dist {

// What one node holds of the tasks' inputs, indexed by task id (shorter vectors: nothing).
struct NodeHoldings {
  std::string host;
  // The fraction of the task's input file this node's cache tier holds (0..1).
  std::vector<double> cached_fraction;
  // The task's input file is on a node-local disk of this node.
  std::vector<bool> local_file;
};

// Pure. For each task:
//  1. its input file is node-local on some nodes but not on all: hosts = those nodes and
//     only_on_hosts (no other node can read it); on every node: no preference from it;
//  2. otherwise, nodes whose cache holds at least `options.cache_fraction` of it are added
//     to its hosts (after any it has, e.g. HDFS's), the most held first.
// Hosts are listed once each; reports of one host (several ranks of a node) are merged.
void AddHostsFromNodes(const std::vector<NodeHoldings>& nodes, const LocalityOptions& options,
                       std::vector<TaskSpec>* tasks);

// A task's input file and its size, as this rank sees them: "" when it has none.
struct TaskFile {
  std::string path;  // on `fs`
  uint64_t bytes = 0;
};

// The file a conversion's file task (input_split.h FileRange) reads, when it is a path of the
// local file system; {"", 0} for a URI or another kind of task. The size is left 0: a range
// of a file is no cached file, so only node-local files count.
TaskFile LocalFileOfFileTask(const TaskSpec& task);

// Collective; nothing when every rank is on one node. Rank 0 broadcasts each task's file (`file_of`
// is called on rank 0 only, on its `tasks`); each node's first rank reports what the node holds
// (its cache directory's holdings; for files of the local file system, whether they exist here on a
// node-local disk); rank 0 applies AddHostsFromNodes to its `tasks`. Other ranks' `tasks` are left
// alone. A node whose cache cannot be read holds nothing (locality is best effort).
Status GatherNodeLocality(Transport* transport, std::string_view fs_name,
                          const std::function<TaskFile(const TaskSpec&)>& file_of,
                          const LocalityOptions& options, std::vector<TaskSpec>* tasks);

// Whether `path` is on a node-local disk: under one of `local_dirs`, or on a file system
// statfs does not report as shared (false if it does not exist).
bool IsNodeLocalFile(const std::string& path, const std::vector<std::string>& local_dirs);

}  // namespace sluice::dist

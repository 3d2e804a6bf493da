// The map phase of a keyed job: a task per input shard; each attempt reads its shard's
// records and writes (key, value) entries through a MapOutput named by task and attempt.
// Afterwards each rank keeps the outputs of its committed attempts and deletes the others
// (a losing speculative copy's output is never aggregated).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "sluice/dist/jobs.h"
#include "sluice/io/block_location.h"

namespace sluice::dist {

// Emits the entries of one record: record `index` of the shard of task `task`.
using KeyFunction =
    std::function<Status(ByteView record, TaskId task, uint64_t index, MapOutput* out)>;

// Reads the shard `input` of task `task` (record by record) into key_function, stopping
// when `cancel` is set; returns the records read. Errors name the shard and record.
Result<uint64_t> MapShard(io::FileSystem* fs, const std::string& input, TaskId task,
                          const KeyFunction& key_function, const io::CancelToken& cancel,
                          MapOutput* out);

struct MapPhaseResult {
  std::vector<std::string> runs;  // this rank's committed outputs (local files)
  std::vector<KeySample> samples;
  std::vector<uint64_t> records;  // every task's record count (from rank 0's results)
  TaskRunResult tasks;
};

// Deletes a map phase's local run files when the job using them returns, on every path: no
// later run needs them (a rerun of a derived job gets its kept outputs again), and a spill
// directory must not fill up with one job's leftovers after another.
class DeleteRunsOnExit {
 public:
  explicit DeleteRunsOnExit(const MapPhaseResult& map) : map_(map) {}
  ~DeleteRunsOnExit();
  DeleteRunsOnExit(const DeleteRunsOnExit&) = delete;
  DeleteRunsOnExit& operator=(const DeleteRunsOnExit&) = delete;

 private:
  const MapPhaseResult& map_;
};

// Collective. `input` is the dataset the tasks' shards belong to (its file system reads them).
Result<MapPhaseResult> RunMapPhase(Transport* transport, const std::string& input,
                                   const std::vector<TaskSpec>& tasks,
                                   const KeyFunction& key_function,
                                   const AggregationOptions& aggregation,
                                   const TaskRunnerOptions& runner_options);

// A task's preferred nodes from its input's blocks: the (at most 3) hosts holding the most
// bytes, as Hadoop's FileInputFormat.getSplitHosts. Tasks over HDFS get them from WebHDFS
// (io::FileBlockLocations); other file systems know no hosts.
std::vector<std::string> PreferredHosts(const std::vector<io::BlockLocation>& blocks);

AggregationOptions AggregationOptionsFor(const JobOptions& job, Merge merge, std::string stage);

}  // namespace sluice::dist

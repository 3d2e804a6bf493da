#include "dist/map_phase.h"

#include <algorithm>
#include <map>
#include <random>

#include "dist/wire.h"
#include "sluice/base/random.h"
#include "sluice/dist/locality.h"
#include "sluice/format/manifest.h"
#include "sluice/format/record_reader.h"
#include "sluice/io/block_location.h"
#include "sluice/table/table.h"

namespace sluice::dist {

Result<uint64_t> MapShard(io::FileSystem* fs, const std::string& input, TaskId task,
                          const KeyFunction& key_function, const io::CancelToken& cancel,
                          MapOutput* out) {
  SLUICE_ASSIGN_OR_RETURN(auto reader, format::RecordReader::Open(fs, input));
  ByteView record;
  uint64_t index = 0;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    if ((index & 1023) == 0 && cancel.cancelled()) return Cancelled("another copy finished");
    Status s = key_function(record, task, index++, out);
    if (!s.ok()) return s.WithContext(input + ": record " + std::to_string(index - 1));
  }
  return index;
}

AggregationOptions AggregationOptionsFor(const JobOptions& job, Merge merge, std::string stage) {
  AggregationOptions o;
  o.merge = merge;
  o.combine = job.combine;
  o.salt_hot_keys = job.salt_hot_keys;
  o.memory_budget = job.memory_budget;
  o.spill_dir = job.spill_dir;
  o.stage = std::move(stage);
  return o;
}

std::vector<std::string> PreferredHosts(const std::vector<io::BlockLocation>& blocks) {
  // As Hadoop's FileInputFormat.getSplitHosts: the hosts holding the most bytes of the input.
  std::map<std::string, uint64_t> bytes;
  for (const auto& b : blocks) {
    for (const auto& h : b.hosts) bytes[h] += b.length;
  }
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (const auto& [host, n] : bytes) ranked.emplace_back(n, host);
  std::sort(ranked.begin(), ranked.end(), std::greater<>());
  std::vector<std::string> hosts;
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) hosts.push_back(ranked[i].second);
  return hosts;
}

Result<std::vector<TaskSpec>> ShardTasks(const std::string& input) {
  std::string path;
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * fs, io::FileSystemFor(input, &path));
  SLUICE_ASSIGN_OR_RETURN(auto table, table::ResolveTableRead(fs, path));
  std::vector<std::string> shards;
  if (table.has_value()) {
    shards = std::move(table->files);
  } else {
    SLUICE_ASSIGN_OR_RETURN(shards, format::ResolveShards(fs, path));
  }
  std::vector<TaskSpec> tasks;
  for (const auto& shard : shards) {
    TaskSpec t;
    t.id = tasks.size();
    t.input = shard;
    SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, fs->Stat(shard));
    t.bytes = info.size;
    // Only HDFS knows where a file's bytes live; other file systems would answer one block
    // without hosts, at the cost of a request per shard.
    if (fs->name() == "hdfs") {
      SLUICE_ASSIGN_OR_RETURN(auto blocks, io::FileBlockLocations(shard));
      t.hosts = PreferredHosts(blocks);
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

namespace {

struct AttemptOutput {
  std::string run;
  KeySample sample;
};

class MapHandler final : public TaskHandler {
 public:
  MapHandler(io::FileSystem* fs, const KeyFunction& key_function, AggregationOptions options,
             std::string run_prefix)
      : fs_(fs),
        key_function_(key_function),
        options_(std::move(options)),
        run_prefix_(std::move(run_prefix)) {}

  Result<std::string> Run(const TaskSpec& task, int attempt,
                          const io::CancelToken& cancel) override {
    std::string run =
        run_prefix_ + "-t" + std::to_string(task.id) + "-a" + std::to_string(attempt) + ".run";
    MapOutput out(options_, run, Mix64(task.id));
    SLUICE_ASSIGN_OR_RETURN(uint64_t index,
                            MapShard(fs_, task.input, task.id, key_function_, cancel, &out));
    SLUICE_RETURN_IF_ERROR(out.Close());
    {
      std::lock_guard lock(mu_);
      outputs_.insert_or_assign({task.id, attempt}, AttemptOutput{run, out.sample()});
    }
    return WireWriter().U64(index).Take();
  }

  // Keeps the committed attempts' outputs of this rank; deletes the rest.
  void Collect(const TaskRunResult& result, Rank self, MapPhaseResult* out) {
    std::lock_guard lock(mu_);
    for (auto& [key, output] : outputs_) {
      auto [task, attempt] = key;
      if (result.committed_rank[task] == self && result.committed_attempt[task] == attempt) {
        out->runs.push_back(output.run);
        out->samples.push_back(output.sample);
      } else {
        (void)io::LocalFileSystem()->Delete(output.run);
      }
    }
    outputs_.clear();
  }

 private:
  io::FileSystem* fs_;
  const KeyFunction& key_function_;
  const AggregationOptions options_;
  const std::string run_prefix_;
  std::mutex mu_;
  std::map<std::pair<TaskId, int>, AttemptOutput> outputs_;  // guarded by mu_
};

}  // namespace

DeleteRunsOnExit::~DeleteRunsOnExit() {
  for (const std::string& run : map_.runs) (void)io::LocalFileSystem()->Delete(run);
}

Result<MapPhaseResult> RunMapPhase(Transport* t, const std::string& input,
                                   const std::vector<TaskSpec>& tasks,
                                   const KeyFunction& key_function,
                                   const AggregationOptions& aggregation,
                                   const TaskRunnerOptions& runner_options) {
  std::string path;
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * fs, io::FileSystemFor(input, &path));
  // Run files of concurrent jobs on one node must not collide: a job id from rank 0.
  std::string id = t->rank() == 0 ? std::to_string(std::random_device()()) : "";
  SLUICE_ASSIGN_OR_RETURN(id, t->Broadcast(id, 0));
  std::string prefix = aggregation.spill_dir + "/sluice-" + id + "-r" + std::to_string(t->rank());
  // Locality beyond HDFS: nodes whose cache tier holds a shard, or that have it on their own
  // disk, prefer its task (dist/locality.h).
  std::vector<TaskSpec> located = tasks;
  const LocalityOptions& locality = runner_options.scheduler.locality;
  SLUICE_RETURN_IF_ERROR(GatherNodeLocality(
      t, fs->name(),
      [](const TaskSpec& task) {
        return TaskFile{task.input, task.bytes};
      },
      locality, &located));
  MapHandler handler(fs, key_function, aggregation, prefix);
  TaskRunner runner(t, runner_options);
  MapPhaseResult result;
  SLUICE_ASSIGN_OR_RETURN(result.tasks, runner.Run(located, &handler));
  handler.Collect(result.tasks, t->rank(), &result);
  for (const auto& r : result.tasks.results) {
    uint64_t n = 0;
    WireReader(r).U64(&n);
    result.records.push_back(n);
  }
  return result;
}

}  // namespace sluice::dist

// What a job deriving one dataset from another starts and ends with (dedup, reshard): the
// input's shards as tasks, the output opened through JobOutput (OUT's writer lock taken by
// rank 0, a published dataset refused unless overwriting), a map phase whose committed tasks'
// outputs are kept in OUT's job directory (a rerun of the same job reuses them), each rank's
// written shards gathered on rank 0, and a manifest carrying the input's features and metadata.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist/map_phase.h"
#include "sluice/dist/job_output.h"
#include "sluice/dist/jobs.h"

namespace sluice::dist {

struct DerivedJob {
  std::vector<TaskSpec> tasks;
  io::FileSystem* in_fs = nullptr;
  std::string in_path;
  std::unique_ptr<JobOutput> out;
};

// Collective. `command` names the writer in OUT's lock ("sluice dedup"); `options` are the
// command's own options that change its output (with the command, the input's shards and
// their sizes, and `shards`, they are the job's identity: a rerun resumes only when all match).
// `tasks` are then those of an interrupted run of the same job when there is one.
Result<DerivedJob> StartDerivedJob(Transport* transport, const std::string& input,
                                   const std::string& output, const OutputShards& shards,
                                   const std::string& command, const std::string& options);

// Collective: the map phase of a derived job (map_phase.h's, resumable). Each map attempt
// writes its run locally and copies it into OUT's job directory before reporting; rank 0
// records each committed task's copy, key sample and record count there as it is committed.
// The tasks an interrupted run committed are not run again: their runs are fetched from the
// job directory, shared round-robin over the ranks. The result covers every task by its id
// (`tasks.committed_rank`: the rank holding its run, which reads it for the job's later
// steps); `tasks.progress` is that of the tasks run now.
Result<MapPhaseResult> RunDerivedMapPhase(Transport* transport, DerivedJob* job,
                                          const KeyFunction& key_function,
                                          const AggregationOptions& aggregation,
                                          const TaskRunnerOptions& runner_options);

// A part writer's output, as a task's.
TaskOutput OutputOf(const format::ShardWriter& writer);

// Collective: the outputs each rank wrote (by output task, 0..tasks-1) reach rank 0, which
// publishes them in task order with the input's features and metadata plus `metadata` (the
// commit point). They are not recorded in the job directory (its records are the map tasks').
// Every rank returns the same status; rank 0 fills `published`.
Status PublishDerived(Transport* transport, DerivedJob* job, uint64_t tasks,
                      const std::vector<std::pair<TaskId, TaskOutput>>& mine,
                      std::map<std::string, std::string> metadata, format::Manifest* published);

// The ShardWriterOptions of a job's OutputShards.
Result<format::ShardWriterOptions> ShardWriterOptionsFor(const OutputShards& shards);

}  // namespace sluice::dist

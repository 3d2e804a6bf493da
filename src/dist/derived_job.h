// What a job deriving one dataset from another starts and ends with (dedup, reshard): the
// input's shards as tasks, the output opened through JobOutput (OUT's writer lock taken by
// rank 0, a published dataset refused unless overwriting), each rank's written shards
// gathered on rank 0, and a manifest carrying the input's features and metadata.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sluice/dist/job_output.h"
#include "sluice/dist/jobs.h"

namespace sluice::dist {

struct DerivedJob {
  std::vector<TaskSpec> tasks;
  io::FileSystem* in_fs = nullptr;
  std::string in_path;
  std::unique_ptr<JobOutput> out;
};

// Collective. `command` names the writer in OUT's lock ("sluice dedup").
Result<DerivedJob> StartDerivedJob(Transport* transport, const std::string& input,
                                   const std::string& output, const OutputShards& shards,
                                   const std::string& command);

// A part writer's output, as a task's.
TaskOutput OutputOf(const format::ShardWriter& writer);

// Collective: the outputs each rank wrote (by output task) reach rank 0, which publishes them
// in task order with the input's features and metadata plus `metadata` (the commit point).
// Every rank returns the same status; rank 0 fills `published`.
Status PublishDerived(Transport* transport, DerivedJob* job, uint64_t tasks,
                      const std::vector<std::pair<TaskId, TaskOutput>>& mine,
                      std::map<std::string, std::string> metadata, format::Manifest* published);

// The ShardWriterOptions of a job's OutputShards.
Result<format::ShardWriterOptions> ShardWriterOptionsFor(const OutputShards& shards);

}  // namespace sluice::dist

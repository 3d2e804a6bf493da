#include "dist/derived_job.h"

#include <nlohmann/json.hpp>

#include "dist/wire.h"
#include "sluice/dist/task_runner.h"
#include "sluice/table/table.h"

namespace sluice::dist {

Result<format::ShardWriterOptions> ShardWriterOptionsFor(const OutputShards& shards) {
  format::ShardWriterOptions o;
  SLUICE_ASSIGN_OR_RETURN(o.record.codec, format::ParseCodec(shards.codec));
  o.target_shard_bytes = shards.shard_bytes;
  o.prefix = shards.prefix;
  return o;
}

namespace {

// What makes two runs the same job: a rerun resumes only when all of it matches.
std::string Identity(const std::string& command, const std::string& options,
                     const std::string& input, const std::vector<TaskSpec>& tasks,
                     const OutputShards& shards) {
  nlohmann::json j = {{"command", command},
                      {"options", options},
                      {"input", input},
                      {"codec", shards.codec},
                      {"shard_bytes", shards.shard_bytes},
                      {"prefix", shards.prefix},
                      {"table", shards.table},
                      {"table_overwrite", shards.table_overwrite}};
  for (const TaskSpec& t : tasks) j["shards"].push_back({t.input, t.bytes});
  return j.dump();
}

}  // namespace

Result<DerivedJob> StartDerivedJob(Transport* t, const std::string& input,
                                   const std::string& output, const OutputShards& shards,
                                   const std::string& command, const std::string& options) {
  DerivedJob job;
  SLUICE_ASSIGN_OR_RETURN(job.tasks, ShardTasks(input));
  SLUICE_ASSIGN_OR_RETURN(job.in_fs, io::FileSystemFor(input, &job.in_path));
  std::string out_path;
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * out_fs, io::FileSystemFor(output, &out_path));
  JobOutputOptions o;
  SLUICE_ASSIGN_OR_RETURN(o.shards, ShardWriterOptionsFor(shards));
  o.overwrite = shards.overwrite;
  o.table = shards.table;
  o.table_overwrite = shards.table_overwrite;
  o.command = command;
  o.identity = Identity(command, options, input, job.tasks, shards);
  SLUICE_ASSIGN_OR_RETURN(job.out, JobOutput::Open(t, out_fs, out_path, o, &job.tasks));
  return job;
}

TaskOutput OutputOf(const format::ShardWriter& writer) {
  return TaskOutput{writer.manifest().shards, std::string()};
}

namespace {

// Rank 0: every rank's outputs, by output task.
Status GatherOutputs(const std::vector<std::string>& all, std::vector<TaskOutput>* outputs,
                     std::vector<bool>* have) {
  for (const std::string& part : all) {
    WireReader in(part);
    uint64_t n = 0;
    if (!in.U64(&n) || n > part.size()) return Internal("malformed task outputs");
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t task = 0;
      std::string encoded;
      if (!in.U64(&task) || !in.Bytes(&encoded)) return Internal("malformed task outputs");
      SLUICE_ASSIGN_OR_RETURN(TaskOutput output, TaskOutput::Decode(encoded, "task outputs"));
      if (task >= outputs->size()) return Internal("output task " + std::to_string(task));
      (*outputs)[task] = std::move(output);
      (*have)[task] = true;
    }
  }
  return Status::OK();
}

// The input's features and metadata: a dataset's manifest, a table's metaData (its
// "sluice.<key>" properties), none for a shard or a glob.
Status InputSchema(io::FileSystem* fs, const std::string& path, format::Manifest* m) {
  SLUICE_ASSIGN_OR_RETURN(auto selection, table::ResolveTableRead(fs, path));
  if (selection.has_value()) {
    table::OpenOptions version;
    version.version = selection->version;
    SLUICE_ASSIGN_OR_RETURN(table::Table t, table::Table::Open(fs, selection->root, version));
    m->features = t.features();
    for (const auto& [key, value] : t.metadata().configuration) {
      if (key.starts_with("sluice.")) m->metadata.emplace(key.substr(7), value);
    }
    return Status::OK();
  }
  auto input = format::Manifest::Load(fs, path);
  if (input.ok()) *m = std::move(*input);
  return Status::OK();
}

// The input's features and metadata plus `metadata`.
Result<format::Manifest> DerivedManifest(io::FileSystem* in_fs, const std::string& in_path,
                                         std::map<std::string, std::string> metadata) {
  format::Manifest input;
  SLUICE_RETURN_IF_ERROR(InputSchema(in_fs, in_path, &input));
  format::Manifest m;
  m.features = std::move(input.features);
  for (const auto& [key, value] : input.metadata) {
    // A side file of the input (its class list) is not a file of the output.
    if (!key.ends_with("_file")) metadata.emplace(key, value);
  }
  m.metadata = std::move(metadata);
  return m;
}

}  // namespace

Status PublishDerived(Transport* t, DerivedJob* job, uint64_t tasks,
                      const std::vector<std::pair<TaskId, TaskOutput>>& mine,
                      std::map<std::string, std::string> metadata, format::Manifest* published) {
  WireWriter w;
  w.U64(mine.size());
  for (const auto& [task, output] : mine) w.U64(task).Bytes(output.Encode());
  SLUICE_ASSIGN_OR_RETURN(auto all, t->AllGather(w.Take()));
  Status s;
  if (t->rank() == 0) {
    std::vector<TaskOutput> outputs(tasks);
    std::vector<bool> have(tasks, false);
    s = GatherOutputs(all, &outputs, &have);
    for (uint64_t task = 0; s.ok() && task < tasks; ++task) {
      if (!have[task]) s = Internal("output task " + std::to_string(task) + " has no output");
    }
    Result<format::Manifest> manifest = DerivedManifest(job->in_fs, job->in_path, metadata);
    if (s.ok()) s = manifest.status();
    if (s.ok()) s = job->out->Publish(outputs, std::move(*manifest), published);
  }
  return AgreeOnStatus(t, s);
}

}  // namespace sluice::dist

// A dataset written by many ranks and published once (DESIGN.md, "Publication"): each task
// writes its shards as a small complete dataset in OUT/.sluice-staging/task-000012/; rank 0
// publishes them at the end, in task order, as OUT's shards ("-of-N" names decided then,
// once) and writes dataset.json last, the commit point. A job killed before that leaves no
// dataset.json, so readers see no dataset; a rerun finds the staged tasks it can reuse.
// (Issue 13's DatasetPublisher replaces the renames and the manifest write once it lands.)
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sluice/dist/task.h"
#include "sluice/dist/transport.h"
#include "sluice/format/manifest.h"
#include "sluice/format/shard_writer.h"
#include "sluice/io/file_system.h"

namespace sluice::dist {

class StagedOutput {
 public:
  static constexpr const char* kStagingDir = ".sluice-staging";
  StagedOutput(io::FileSystem* fs, std::string out_dir)
      : fs_(fs), out_(std::move(out_dir)), staging_(io::JoinPath(out_, kStagingDir)) {}

  io::FileSystem* fs() const { return fs_; }
  // AlreadyExists when OUT holds a published dataset.
  Status CheckNotPublished() const;
  // Where attempt `attempt` of `task` writes (a ShardWriter directory).
  std::string AttemptDir(TaskId task, int attempt) const;
  // AttemptDir, emptied of what an earlier run may have left there.
  std::string FreshAttemptDir(TaskId task, int attempt) const;
  // Rank 0: the attempt's output becomes the task's (an atomic rename of its directory).
  Status CommitAttempt(TaskId task, int attempt);
  // Whether `task`'s output was committed by an earlier run (reused by a rerun).
  bool TaskDone(TaskId task) const;
  // Rank 0: Publish with the features and metadata of the input dataset (a derived dataset:
  // dedup, reshard), plus `metadata`.
  Status PublishDerived(uint64_t tasks, const std::string& prefix, io::FileSystem* in_fs,
                        const std::string& in_path, std::map<std::string, std::string> metadata,
                        format::Manifest* published);
  // Rank 0: publishes the tasks' shards in order, then dataset.json; removes the staging.
  Status Publish(uint64_t tasks, const std::string& prefix,
                 std::map<std::string, format::FeatureSchema> features,
                 std::map<std::string, std::string> metadata, format::Manifest* published);

 private:
  std::string TaskDir(TaskId task) const;
  void RemoveTree(const std::string& dir) const;

  io::FileSystem* fs_;
  std::string out_, staging_;
};

// What a job deriving one dataset from another starts with (dedup, reshard): the input's
// shards as tasks, where it lives, and the staged output, checked on rank 0 to hold no
// published dataset (collective: the check's outcome is every rank's).
struct DerivedJob {
  std::vector<TaskSpec> tasks;
  io::FileSystem* in_fs = nullptr;
  std::string in_path;
  std::unique_ptr<StagedOutput> out;
};
Result<DerivedJob> StartDerivedJob(Transport* transport, const std::string& input,
                                   const std::string& output);

}  // namespace sluice::dist

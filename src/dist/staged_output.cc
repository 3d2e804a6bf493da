#include "dist/staged_output.h"

#include <cstdio>

#include "sluice/dist/jobs.h"
#include "sluice/dist/task_runner.h"
#include "sluice/format/shard_index.h"

namespace sluice::dist {
namespace {

std::string Number(uint64_t i, int width) {
  char text[32];
  std::snprintf(text, sizeof(text), "%0*llu", width, static_cast<unsigned long long>(i));
  return text;
}

}  // namespace

Status StagedOutput::CheckNotPublished() const {
  std::string manifest = io::JoinPath(out_, format::Manifest::kFileName);
  if (fs_->Exists(manifest)) {
    return AlreadyExists(manifest + " exists: refusing to write a dataset over another one");
  }
  return Status::OK();
}

std::string StagedOutput::TaskDir(TaskId task) const {
  return io::JoinPath(staging_, "task-" + Number(task, 6));
}

std::string StagedOutput::AttemptDir(TaskId task, int attempt) const {
  return TaskDir(task) + ".attempt-" + std::to_string(attempt);
}

std::string StagedOutput::FreshAttemptDir(TaskId task, int attempt) const {
  std::string dir = AttemptDir(task, attempt);
  RemoveTree(dir);  // what a killed run left
  return dir;
}

Status StagedOutput::CommitAttempt(TaskId task, int attempt) {
  RemoveTree(TaskDir(task));  // an earlier run's output of the same task
  return fs_->Rename(AttemptDir(task, attempt), TaskDir(task));
}

bool StagedOutput::TaskDone(TaskId task) const {
  return fs_->Exists(io::JoinPath(TaskDir(task), format::Manifest::kFileName));
}

void StagedOutput::RemoveTree(const std::string& dir) const {
  auto entries = fs_->List(dir);
  if (entries.ok()) {
    for (const auto& e : *entries) {
      if (e.is_directory) {
        RemoveTree(e.path);
      } else {
        (void)fs_->Delete(e.path);
      }
    }
  }
  (void)fs_->Delete(dir);
}

Status StagedOutput::PublishDerived(uint64_t tasks, const std::string& prefix,
                                    io::FileSystem* in_fs, const std::string& in_path,
                                    std::map<std::string, std::string> metadata,
                                    format::Manifest* published) {
  std::map<std::string, format::FeatureSchema> features;
  auto input = format::Manifest::Load(in_fs, in_path);  // a shard or a glob has none
  if (input.ok()) {
    features = input->features;
    for (const auto& [key, value] : input->metadata) metadata.emplace(key, value);
  }
  return Publish(tasks, prefix, std::move(features), std::move(metadata), published);
}

Status StagedOutput::Publish(uint64_t tasks, const std::string& prefix,
                             std::map<std::string, format::FeatureSchema> features,
                             std::map<std::string, std::string> metadata,
                             format::Manifest* published) {
  std::vector<std::pair<std::string, format::ManifestShard>> staged;  // (task dir, shard)
  format::Manifest m;
  for (TaskId t = 0; t < tasks; ++t) {
    SLUICE_ASSIGN_OR_RETURN(format::Manifest part, format::Manifest::Load(fs_, TaskDir(t)));
    m.codec = part.codec;
    m.tool = part.tool;
    for (auto& shard : part.shards) staged.emplace_back(TaskDir(t), std::move(shard));
  }
  const uint64_t n = staged.size();
  std::string ext = ".tfrecord" + std::string(format::CodecExtension(m.codec));
  for (uint64_t i = 0; i < n; ++i) {
    auto& [dir, shard] = staged[i];
    format::ManifestShard final_shard = shard;
    final_shard.path = prefix + "-" + Number(i, 5) + "-of-" + Number(n, 5) + ext;
    SLUICE_RETURN_IF_ERROR(
        fs_->Rename(io::JoinPath(dir, shard.path), io::JoinPath(out_, final_shard.path)));
    if (!shard.index.empty()) {
      final_shard.index = format::ShardIndex::IndexPathFor(final_shard.path);
      SLUICE_RETURN_IF_ERROR(
          fs_->Rename(io::JoinPath(dir, shard.index), io::JoinPath(out_, final_shard.index)));
    }
    m.shards.push_back(std::move(final_shard));
  }
  m.features = std::move(features);
  m.metadata = std::move(metadata);
  SLUICE_RETURN_IF_ERROR(m.Save(fs_, out_));  // the commit point
  RemoveTree(staging_);
  *published = std::move(m);
  return Status::OK();
}

Result<DerivedJob> StartDerivedJob(Transport* t, const std::string& input,
                                   const std::string& output) {
  DerivedJob job;
  SLUICE_ASSIGN_OR_RETURN(job.tasks, ShardTasks(input));
  SLUICE_ASSIGN_OR_RETURN(job.in_fs, io::FileSystemFor(input, &job.in_path));
  std::string out_path;
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * out_fs, io::FileSystemFor(output, &out_path));
  job.out = std::make_unique<StagedOutput>(out_fs, out_path);
  SLUICE_RETURN_IF_ERROR(
      AgreeOnStatus(t, t->rank() == 0 ? job.out->CheckNotPublished() : Status::OK()));
  return job;
}

}  // namespace sluice::dist

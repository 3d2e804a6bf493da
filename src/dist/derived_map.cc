// The map phase of a derived job (dedup, reshard), resumable (derived_job.h): each committed
// map task's run, key sample and record count are kept in OUT's job directory, so a rerun of
// the same job after a killed rank reads them back instead of running the task again.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>

#include "dist/derived_job.h"
#include "dist/wire.h"
#include "sluice/base/random.h"
#include "sluice/dist/locality.h"

namespace sluice::dist {
namespace {

// Copies a whole file between file systems, in 1 MiB pieces.
Status CopyFile(io::FileSystem* from_fs, const std::string& from, io::FileSystem* to_fs,
                const std::string& to) {
  SLUICE_ASSIGN_OR_RETURN(auto in, from_fs->OpenForRead(from));
  SLUICE_ASSIGN_OR_RETURN(auto out, to_fs->OpenForWrite(to));
  std::string scratch(1 << 20, '\0');
  for (uint64_t offset = 0; offset < in->size();) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(scratch.size(), in->size() - offset));
    SLUICE_ASSIGN_OR_RETURN(ByteView piece, in->Read(offset, n, scratch.data()));
    if (piece.empty()) return DataLoss(from + ": shorter than its size while copying");
    SLUICE_RETURN_IF_ERROR(out->Append(piece));
    offset += piece.size();
  }
  return out->Close();
}

// A map task's output as the job directory keeps it: its run (a file of the job directory,
// relative to OUT) with the record count, and the key sample as the result.
TaskOutput KeptMapOutput(const std::string& run, uint64_t run_bytes, uint64_t records,
                         const KeySample& sample) {
  format::ManifestShard shard;
  shard.path = run;
  shard.records = records;
  shard.file_bytes = run_bytes;
  return TaskOutput{{shard}, sample.Encode()};
}

struct Attempt {
  std::string local_run, kept_run;  // kept_run: relative to OUT
  KeySample sample;
};

// Runs map attempts of the tasks left to run (renumbered 0..m-1; `original` gives their ids).
class KeptMapAttempts final : public TaskHandler {
 public:
  KeptMapAttempts(const DerivedJob& job, const KeyFunction& key_function,
                  AggregationOptions options, std::string local_prefix,
                  std::vector<TaskId> original)
      : job_(job),
        key_function_(key_function),
        options_(std::move(options)),
        local_prefix_(std::move(local_prefix)),
        original_(std::move(original)) {}

  TaskId Original(TaskId task) const { return original_[task]; }

  Result<std::string> Run(const TaskSpec& task, int attempt,
                          const io::CancelToken& cancel) override {
    const TaskId id = original_[task.id];
    char name[64];
    std::snprintf(name, sizeof name, "map-t%06llua%d.run", static_cast<unsigned long long>(id),
                  attempt);
    Attempt a{local_prefix_ + "-" + name, io::JoinPath(job_.out->job_dir(), name), KeySample(0, 0)};
    MapOutput out(options_, a.local_run, Mix64(id));
    SLUICE_ASSIGN_OR_RETURN(uint64_t index,
                            MapShard(job_.in_fs, task.input, id, key_function_, cancel, &out));
    SLUICE_RETURN_IF_ERROR(out.Close());
    a.sample = out.sample();
    {
      std::lock_guard lock(mu_);
      attempts_.insert_or_assign({id, attempt}, a);
    }
    // Kept before the report, so a committed task's run is always in the job directory.
    io::FileSystem* fs = job_.out->fs();
    SLUICE_RETURN_IF_ERROR(CopyFile(io::LocalFileSystem(), a.local_run, fs,
                                    io::JoinPath(job_.out->dir(), a.kept_run)));
    SLUICE_ASSIGN_OR_RETURN(io::FileInfo kept, fs->Stat(io::JoinPath(job_.out->dir(), a.kept_run)));
    // The record count first: rank 0's progress line reads it.
    return WireWriter()
        .U64(index)
        .Bytes(KeptMapOutput(a.kept_run, kept.size, index, a.sample).Encode())
        .Take();
  }

  // This rank's committed attempts' local runs and samples; the others' files are deleted
  // (all of them when the phase failed, `r` null: rank 0 does not wait for this rank).
  void Collect(const TaskRunResult* r, Rank self, MapPhaseResult* out) {
    std::lock_guard lock(mu_);
    for (auto& [key, a] : attempts_) {
      auto [id, attempt] = key;
      const TaskId task = Index(id);
      if (r && r->committed_rank[task] == self && r->committed_attempt[task] == attempt) {
        out->runs.push_back(a.local_run);
        out->samples.push_back(a.sample);
      } else {
        (void)io::LocalFileSystem()->Delete(a.local_run);
        (void)job_.out->fs()->Delete(io::JoinPath(job_.out->dir(), a.kept_run));
      }
    }
    attempts_.clear();
  }

 private:
  TaskId Index(TaskId id) const {
    return std::lower_bound(original_.begin(), original_.end(), id) - original_.begin();
  }

  const DerivedJob& job_;
  const KeyFunction& key_function_;
  const AggregationOptions options_;
  const std::string local_prefix_;
  const std::vector<TaskId> original_;  // ascending
  std::mutex mu_;
  std::map<std::pair<TaskId, int>, Attempt> attempts_;  // guarded by mu_
};

// Every rank: the outputs of the reused tasks (rank 0 has them), in task order.
Result<std::vector<std::pair<TaskId, TaskOutput>>> ReusedOutputs(Transport* t,
                                                                 const DerivedJob& job) {
  std::string message;
  if (t->rank() == 0) {
    WireWriter w;
    w.U64(job.out->reused_count());
    for (const TaskSpec& task : job.tasks) {
      if (!job.out->Reused(task.id)) continue;
      const TaskOutput* output = job.out->Output(task.id);
      if (output == nullptr || output->shards.size() != 1) {
        return Internal("reused map task " + std::to_string(task.id) + " has no run");
      }
      w.U64(task.id).Bytes(output->Encode());
    }
    message = w.Take();
  }
  SLUICE_ASSIGN_OR_RETURN(message, t->Broadcast(std::move(message), 0));
  WireReader in(message);
  uint64_t n = 0;
  if (!in.U64(&n) || n > message.size()) return Internal("malformed reused map outputs");
  std::vector<std::pair<TaskId, TaskOutput>> reused;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t id = 0;
    std::string encoded;
    if (!in.U64(&id) || !in.Bytes(&encoded) || id >= job.tasks.size()) {
      return Internal("malformed reused map outputs");
    }
    SLUICE_ASSIGN_OR_RETURN(TaskOutput output, TaskOutput::Decode(encoded, "reused map output"));
    if (output.shards.size() != 1) return Internal("malformed reused map outputs");
    reused.emplace_back(id, std::move(output));
  }
  return reused;
}

// This rank's share of the reused tasks (round-robin): their runs fetched from the job
// directory to local files, their samples; every reused task's reader and record count.
Status TakeReused(Transport* t, const DerivedJob& job, const std::string& local_prefix,
                  MapPhaseResult* result) {
  SLUICE_ASSIGN_OR_RETURN(auto reused, ReusedOutputs(t, job));
  Status status;
  for (size_t i = 0; i < reused.size(); ++i) {
    const auto& [id, output] = reused[i];
    const Rank reader = static_cast<Rank>(i % t->size());
    result->tasks.committed_rank[id] = reader;
    result->tasks.committed_attempt[id] = 0;
    result->records[id] = output.shards[0].records;
    if (reader != t->rank() || !status.ok()) continue;
    const std::string local = local_prefix + "-reused-" + std::to_string(id) + ".run";
    status = CopyFile(job.out->fs(), io::JoinPath(job.out->dir(), output.shards[0].path),
                      io::LocalFileSystem(), local);
    if (!status.ok()) break;
    Result<KeySample> sample = KeySample::Decode(output.result);
    status = sample.status();
    if (!status.ok()) break;
    result->runs.push_back(local);
    result->samples.push_back(std::move(*sample));
  }
  return AgreeOnStatus(t, status);
}

}  // namespace

Result<MapPhaseResult> RunDerivedMapPhase(Transport* t, DerivedJob* job,
                                          const KeyFunction& key_function,
                                          const AggregationOptions& aggregation,
                                          const TaskRunnerOptions& runner_options) {
  // Local run files of concurrent jobs on one node must not collide: a job id from rank 0.
  std::string id = t->rank() == 0 ? std::to_string(std::random_device()()) : "";
  SLUICE_ASSIGN_OR_RETURN(id, t->Broadcast(id, 0));
  const std::string local_prefix =
      aggregation.spill_dir + "/sluice-" + id + "-r" + std::to_string(t->rank());

  std::vector<TaskId> original;
  std::vector<TaskSpec> to_run = TasksToRun(*job->out, job->tasks, &original);
  // Nodes whose cache tier holds a shard, or that have it on their own disk, prefer its task.
  SLUICE_RETURN_IF_ERROR(GatherNodeLocality(
      t, job->in_fs->name(),
      [](const TaskSpec& task) {
        return TaskFile{task.input, task.bytes};
      },
      runner_options.scheduler.locality, &to_run));
  KeptMapAttempts attempts(*job, key_function, aggregation, local_prefix, original);
  // Rank 0 records each committed task's kept output as it is committed (a rerun reuses it).
  Status recorded;
  TaskRunnerOptions options = runner_options;
  options.on_commit = [&](TaskId task, const std::string& report) {
    if (runner_options.on_commit) runner_options.on_commit(task, report);
    WireReader in(report);
    uint64_t records = 0;
    std::string encoded;
    Result<TaskOutput> output = DataLoss("malformed map task report");
    if (in.U64(&records) && in.Bytes(&encoded)) output = TaskOutput::Decode(encoded, "map report");
    Status s = output.status();
    if (s.ok()) s = job->out->Record(attempts.Original(task), std::move(*output));
    if (recorded.ok()) recorded = s;
  };
  TaskRunner runner(t, options);
  Result<TaskRunResult> phase = runner.Run(to_run, &attempts);
  MapPhaseResult result;
  attempts.Collect(phase.ok() ? &*phase : nullptr, t->rank(), &result);
  SLUICE_ASSIGN_OR_RETURN(TaskRunResult ran, std::move(phase));
  SLUICE_RETURN_IF_ERROR(AgreeOnStatus(t, recorded));

  // The whole job's view, by original task id.
  const size_t n = job->tasks.size();
  result.tasks.committed_rank.assign(n, 0);
  result.tasks.committed_attempt.assign(n, 0);
  result.records.assign(n, 0);
  result.tasks.progress = ran.progress;
  for (size_t i = 0; i < original.size(); ++i) {
    result.tasks.committed_rank[original[i]] = ran.committed_rank[i];
    result.tasks.committed_attempt[original[i]] = ran.committed_attempt[i];
    if (i < ran.results.size()) WireReader(ran.results[i]).U64(&result.records[original[i]]);
  }
  SLUICE_RETURN_IF_ERROR(TakeReused(t, *job, local_prefix, &result));
  return result;
}

}  // namespace sluice::dist

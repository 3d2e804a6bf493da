#include "sluice/dist/convert_job.h"

#include <cstdio>
#include <mutex>

#include "dist/wire.h"
#include "sluice/dist/locality.h"

namespace sluice::dist {
namespace {

// After this many rounds of Revise the job gives up (each round settles at least the first
// task still asked for, so only a converter that never settles gets here).
constexpr int kMaxRounds = 64;

// One round's attempts on this rank: converts a task into a part writer of the job's run.
class ConvertAttempts final : public TaskHandler {
 public:
  ConvertAttempts(TaskConverter* converter, const JobOutput* out, bool* started)
      : converter_(converter), out_(out), started_(started) {}

  void StartRound(int round, std::vector<TaskId> original, std::map<TaskId, std::string> hints) {
    round_ = round;
    original_ = std::move(original);
    hints_ = std::move(hints);
  }
  TaskId Original(TaskId task) const { return original_[task]; }

  Status Start() override {
    if (*started_) return Status::OK();
    *started_ = true;
    return converter_->Start();
  }

  Result<std::string> Run(const TaskSpec& task, int attempt,
                          const io::CancelToken& cancel) override {
    TaskSpec input = task;
    input.id = original_[task.id];
    SLUICE_ASSIGN_OR_RETURN(auto writer, out_->OpenPart(AttemptPart(input.id, round_, attempt)));
    auto hint = hints_.find(input.id);
    SLUICE_ASSIGN_OR_RETURN(
        std::string result,
        converter_->Convert(input, hint == hints_.end() ? "" : hint->second, writer.get(), cancel));
    SLUICE_RETURN_IF_ERROR(writer->Close());
    TaskOutput output{writer->manifest().shards, std::move(result)};
    {
      std::lock_guard lock(mu_);
      written_[{task.id, attempt}] = output.shards;
    }
    // The record count first: rank 0's progress line reads it.
    return WireWriter().U64(writer->records_written()).Bytes(output.Encode()).Take();
  }

  // Deletes the shards of this rank's attempts that were not committed (losing copies), or
  // of all of them when the phase failed (`r` null). The phase has stopped this rank's
  // attempts: nothing writes any more.
  void DiscardLosers(const TaskRunResult* r, Rank self) {
    std::lock_guard lock(mu_);
    for (const auto& [key, shards] : written_) {
      auto [task, attempt] = key;
      if (r && r->committed_rank[task] == self && r->committed_attempt[task] == attempt) continue;
      for (const auto& s : shards) {
        (void)out_->fs()->Delete(io::JoinPath(out_->dir(), s.path));
        if (!s.index.empty()) (void)out_->fs()->Delete(io::JoinPath(out_->dir(), s.index));
      }
    }
    written_.clear();
  }

 private:
  TaskConverter* converter_;
  const JobOutput* out_;
  bool* started_;
  int round_ = 0;
  std::vector<TaskId> original_;
  std::map<TaskId, std::string> hints_;
  std::mutex mu_;
  std::map<std::pair<TaskId, int>, std::vector<format::ManifestShard>> written_;  // guarded by mu_
};

std::string EncodeRedo(const Status& status, const std::map<TaskId, std::string>& redo) {
  WireWriter w;
  w.Error(status).U64(redo.size());
  for (const auto& [task, hint] : redo) w.U64(task).Bytes(hint);
  return w.Take();
}

Status DecodeRedo(std::string_view data, std::map<TaskId, std::string>* redo) {
  WireReader in(data);
  Status status;
  uint64_t n = 0;
  if (!in.Error(&status) || !in.U64(&n) || n > data.size()) return Internal("malformed redo list");
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t task = 0;
    std::string hint;
    if (!in.U64(&task) || !in.Bytes(&hint)) return Internal("malformed redo list");
    (*redo)[task] = std::move(hint);
  }
  return status;
}

// The results of every task, in order (rank 0).
std::vector<std::string> Results(const JobOutput& out, uint64_t tasks) {
  std::vector<std::string> results(tasks);
  for (TaskId t = 0; t < tasks; ++t) {
    if (const TaskOutput* o = out.Output(t)) results[t] = o->result;
  }
  return results;
}

// Rank 0: the tasks Revise asks for (or why the round failed: `recorded`, rank 0's record of
// the committed tasks); every rank: the same list (or the same error). Announced, not agreed:
// rank 0 decides alone and waits for no rank (task_runner.h, Announce).
Result<std::map<TaskId, std::string>> AnnounceRedo(Transport* t, TaskConverter* converter,
                                                   const JobOutput& out, uint64_t tasks,
                                                   const Status& recorded) {
  std::string message;
  if (t->rank() == 0) {
    auto redo = recorded.ok() ? converter->Revise(Results(out, tasks))
                              : Result<std::map<TaskId, std::string>>(recorded);
    message = redo.ok() ? EncodeRedo(Status::OK(), *redo) : EncodeRedo(redo.status(), {});
  }
  SLUICE_ASSIGN_OR_RETURN(message, Announce(t, std::move(message)));
  std::map<TaskId, std::string> redo;
  SLUICE_RETURN_IF_ERROR(DecodeRedo(message, &redo));
  for (const auto& [task, hint] : redo) {
    if (task >= tasks) return Internal("redo of task " + std::to_string(task) + ": no such task");
  }
  return redo;
}

}  // namespace

std::string AttemptPart(TaskId task, int round, int attempt) {
  char part[64];
  if (round == 0) {
    std::snprintf(part, sizeof part, "t%06llua%d", static_cast<unsigned long long>(task), attempt);
  } else {
    std::snprintf(part, sizeof part, "t%06llur%da%d", static_cast<unsigned long long>(task), round,
                  attempt);
  }
  return part;
}

Result<ConvertJobResult> RunConvertJob(Transport* t, io::FileSystem* fs, const std::string& dir,
                                       std::vector<TaskSpec> tasks, TaskConverter* converter,
                                       const ConvertJobOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(auto out, JobOutput::Open(t, fs, dir, options.output, &tasks));
  // Input files on some nodes' own disks run on those nodes (dist/locality.h).
  SLUICE_RETURN_IF_ERROR(GatherNodeLocality(t, "local", LocalFileOfFileTask,
                                            options.tasks.scheduler.locality, &tasks));
  ConvertJobResult result;
  result.tasks = tasks.size();
  result.reused = out->reused_count();
  result.reclaimed = out->reclaimed();

  // Rank 0 records each committed attempt's output as it is committed (a rerun reuses it).
  Status recorded;
  bool started = false;
  ConvertAttempts attempts(converter, out.get(), &started);
  TaskRunnerOptions runner_options = options.tasks;
  runner_options.on_commit = [&](TaskId task, const std::string& report) {
    if (options.tasks.on_commit) options.tasks.on_commit(task, report);
    WireReader in(report);
    uint64_t records = 0;
    std::string encoded;
    Result<TaskOutput> output = DataLoss("malformed task report");
    if (in.U64(&records) && in.Bytes(&encoded)) output = TaskOutput::Decode(encoded, "task report");
    Status s = output.status();
    if (s.ok()) s = out->Record(attempts.Original(task), std::move(*output));
    if (recorded.ok()) recorded = s;
  };
  TaskRunner runner(t, runner_options);

  std::vector<TaskId> original;
  std::vector<TaskSpec> to_run = TasksToRun(*out, tasks, &original);
  std::map<TaskId, std::string> hints;
  for (int round = 0;; ++round) {
    attempts.StartRound(round, original, hints);
    Result<TaskRunResult> phase = runner.Run(to_run, &attempts);
    // Each rank deletes its own losing output: rank 0 does not wait for the others (a frozen
    // rank deletes its late output when it wakes).
    attempts.DiscardLosers(phase.ok() ? &*phase : nullptr, t->rank());
    SLUICE_ASSIGN_OR_RETURN(TaskRunResult ran, std::move(phase));
    if (round == 0) result.progress = ran.progress;
    SLUICE_ASSIGN_OR_RETURN(hints, AnnounceRedo(t, converter, *out, tasks.size(), recorded));
    if (hints.empty()) break;
    if (round + 1 >= kMaxRounds) {
      return Internal("convert: the tasks' results did not settle after " +
                      std::to_string(kMaxRounds) + " rounds");
    }
    result.redone += hints.size();
    to_run.clear();
    original.clear();
    for (const auto& [task, hint] : hints) {
      original.push_back(task);
      to_run.push_back(tasks[task]);
      to_run.back().id = to_run.size() - 1;
    }
  }

  Status published;
  if (t->rank() == 0) {
    result.results = Results(*out, tasks.size());
    format::Manifest manifest;
    published = converter->Finish(result.results, out.get(), &manifest);
    if (published.ok())
      published = out->Publish(tasks.size(), std::move(manifest), &result.manifest);
    if (published.ok() && out->table_commit().has_value()) {
      result.table_version = out->table_commit()->version;
      result.table_commit_duplicate = out->table_commit()->duplicate;
    }
  }
  SLUICE_RETURN_IF_ERROR(AnnounceStatus(t, published));
  return result;
}

}  // namespace sluice::dist

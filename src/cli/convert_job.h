// What the `convert` commands share when they run as a job of several processes
// (`mpirun -np N sluice convert ...`, `srun -n N sluice convert ...`; docs/dist.md, "convert
// under MPI"): their inputs (several files or quoted globs), the job flags, the tasks, and the
// run of dist::RunConvertJob with the summary rank 0 prints. Each command supplies what a
// record is made of as a dist::TaskConverter whose task results are JSON objects holding at
// least the counts of TaskCounts.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/dist_job.h"
#include "cli/progress.h"
#include "sluice/dist/convert_job.h"
#include "sluice/dist/input_split.h"
#include "sluice/format/manifest.h"

namespace sluice::cli {

// Whether mpirun or srun started this process: the convert commands then run as a job.
bool UnderJobLauncher();

// The input files named by `args` (paths, URIs or quoted globs), in the order given, each
// glob's matches sorted; NotFound naming a glob that matches nothing.
Result<std::vector<dist::InputFile>> ExpandInputs(const std::vector<std::string>& args);

// The positionals "FILE... OUT" of a convert command (CLI11 cannot put a required positional
// after a list): `files` gets the inputs, `out` the last argument.
void AddInputsAndOut(CLI::App* command, std::vector<std::string>* files, std::string* out,
                     const std::string& what);

// --strict: a convert that would skip an input (an unreadable image, a bad JSON line,
// invalid UTF-8) fails instead, naming it, and publishes nothing (docs/cli.md, "Exit codes").
void AddStrictFlag(CLI::App* command, bool* strict);
// The error of a skip under --strict: "<input>: <reason> (--strict: ...)".
Status StrictFailure(const std::string& input, const std::string& reason);

struct ConvertJobFlags {
  DistFlags dist;
  std::string task_size = "auto";  // Default: auto (dist::AutoTaskBytes)
  TableOutputFlags output;         // --table, --mode
  // Under mpirun/srun: after the output is published (or the job failed), how long rank 0
  // waits for the other ranks to end before abandoning those that do not answer (a frozen
  // rank): the job then exits kExitAbandoned (published) or 1. Default: 60 s.
  double exit_wait = 60;
};

// The exit code of a job whose output is published (complete: `sluice verify` passes) but
// one of whose ranks did not end within --exit-wait: rank 0 ended the job with MPI_Abort, so
// mpirun/srun end the silent ranks.
inline constexpr int kExitAbandoned = 3;
void AddConvertJobFlags(CLI::App* command, ConvertJobFlags* flags);

// The bytes of a file task's input: the whole file, or the lines a byte range stands for
// (io::LineAlignedRange). `begin` is set to their offset in the file.
Result<std::string> ReadTaskInput(const dist::FileRange& range, uint64_t* begin);
// The same bytes as [begin, end) of the file, without reading them.
Result<std::pair<uint64_t, uint64_t>> TaskInputRange(io::FileSystem* fs,
                                                     const dist::FileRange& range);

// The counts every convert task reports (keys of its JSON result).
struct TaskCounts {
  uint64_t records = 0, skipped = 0, bytes_in = 0;
  static TaskCounts Of(const std::string& result);  // zeros for a result that is not JSON
};

// A task's schema (format::SchemaInference::schema()) as JSON, for its result's "schema".
std::string SchemaToJson(const std::map<std::string, format::FeatureSchema>& schema);
// The schema of consecutive parts' records (each part's record count and schema) as one
// inference over all of them gives.
std::map<std::string, format::FeatureSchema> MergeSchemas(
    const std::vector<std::pair<uint64_t, std::map<std::string, format::FeatureSchema>>>& parts);
// The dataset's schema from the tasks' results (their "records" and "schema"), in task order.
Result<std::map<std::string, format::FeatureSchema>> SchemaOfResults(
    const std::vector<std::string>& results);

struct ConvertJobSpec {
  std::string command;  // "sluice convert jsonl": names the writer in OUT's lock
  std::string out;      // OUT
  OutputOptions output;
  ConvertJobFlags flags;
  // What makes two runs the same job besides the tasks (the command's options): a rerun of
  // the same command after a crash reuses the tasks the first run finished.
  std::string options;
};

// Runs the job on every rank; rank 0 prints the summary (records, skipped, shards, bytes,
// and `notes` of the converter) and the progress line. Returns the exit code.
// `plan` makes the tasks for the job's rank count (rank 0 only); `files` are the inputs (with
// `spec.options`, the job's identity). `notes` (filled by the converter's Finish) are printed.
using TaskPlan = std::function<Result<std::vector<dist::TaskSpec>>(int ranks)>;
int RunConvertCommand(const ConvertJobSpec& spec, const std::vector<dist::InputFile>& files,
                      const TaskPlan& plan, dist::TaskConverter* converter,
                      const std::vector<std::string>* notes = nullptr);

// The input bytes of one task: --task-size, or dist::AutoTaskBytes of the job's bytes.
Result<uint64_t> TaskBytesFor(const ConvertJobFlags& flags, uint64_t total_bytes, int ranks);

// Tasks over whole files or byte ranges of them (`splittable`) of about the job's task size.
TaskPlan FileTaskPlan(const ConvertJobFlags& flags, const std::vector<dist::InputFile>& files,
                      bool splittable);

}  // namespace sluice::cli

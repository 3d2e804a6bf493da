#include "cli/convert_job.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "dist/derived_job.h"
#include "sluice/base/bytes.h"
#include "sluice/dist/launch.h"
#include "sluice/io/line_reader.h"

namespace sluice::cli {

using Json = nlohmann::json;

bool UnderJobLauncher() {
  auto launcher = dist::DetectLauncher(std::getenv);
  // A launcher sluice cannot join (srun --mpi=none) is refused with a hint by the job.
  return !launcher.ok() || *launcher != dist::Launcher::kNone;
}

Result<std::vector<dist::InputFile>> ExpandInputs(const std::vector<std::string>& args) {
  std::vector<dist::InputFile> files;
  for (const std::string& arg : args) {
    SLUICE_ASSIGN_OR_RETURN(Location in, Locate(arg));
    if (arg.find_first_of("*?[") == std::string::npos) {
      SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, in.fs->Stat(in.path));
      files.push_back({arg, info.size});
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> matches, in.fs->Glob(in.path));
    if (matches.empty()) return NotFound(arg + ": no file matches");
    for (const std::string& path : matches) {
      SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, in.fs->Stat(path));
      files.push_back({path, info.size});
    }
  }
  return files;
}

Result<std::pair<uint64_t, uint64_t>> TaskInputRange(io::FileSystem* fs,
                                                     const dist::FileRange& range) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(range.path));
  if (range.whole) return std::pair<uint64_t, uint64_t>(0, file->size());
  return io::LineAlignedRange(*file, range.begin, range.end);
}

Result<std::string> ReadTaskInput(const dist::FileRange& range, uint64_t* begin) {
  SLUICE_ASSIGN_OR_RETURN(Location in, Locate(range.path));
  if (range.whole) {
    *begin = 0;
    return in.fs->ReadAll(in.path);
  }
  SLUICE_ASSIGN_OR_RETURN(auto file, in.fs->OpenForRead(in.path));
  SLUICE_ASSIGN_OR_RETURN(auto lines, io::LineAlignedRange(*file, range.begin, range.end));
  *begin = lines.first;
  std::string data(lines.second - lines.first, '\0');
  SLUICE_ASSIGN_OR_RETURN(ByteView got, file->Read(lines.first, data.size(), data.data()));
  if (got.size() != data.size()) {
    return DataLoss(range.path + ": short read at offset " + std::to_string(lines.first));
  }
  if (got.data() != data.data()) data.assign(got);
  return data;
}

void AddInputsAndOut(CLI::App* cmd, std::vector<std::string>* files, std::string* out,
                     const std::string& what) {
  cmd->add_option("FILE", *files,
                  what +
                      " (several, or quoted globs such as 'corpus/*'), then OUT, the output "
                      "directory")
      ->required()
      ->expected(2, CLI::detail::expected_max_vector_size);
  cmd->parse_complete_callback([files, out] {
    if (files->size() < 2) return;
    *out = files->back();
    files->pop_back();
  });
}

void AddStrictFlag(CLI::App* cmd, bool* strict) {
  cmd->add_flag("--strict", *strict,
                "fail (exit 1, nothing published) at the first input that would be skipped, "
                "naming it, instead of skipping it with a warning");
}

Status StrictFailure(const std::string& input, const std::string& reason) {
  // Under mpirun/srun the task that meets it fails the job at once (a data error is not
  // retried), and a failed job deletes its files: nothing is published there either.
  return InvalidArgument(input + ": " + reason +
                         " (--strict: a skipped input fails the run; nothing was published)");
}

void AddConvertJobFlags(CLI::App* cmd, ConvertJobFlags* f) {
  AddSchedulingFlags(cmd, &f->dist);
  RefuseKeyedJobFlags(cmd);
  cmd->add_option("--task-size", f->task_size,
                  "under mpirun/srun: input bytes per task (auto: 16 tasks per rank, within "
                  "1 MiB..128 MiB)")
      ->capture_default_str();
  cmd->add_option("--exit-wait", f->exit_wait,
                  "under mpirun/srun: seconds rank 0 waits, once the output is published, for "
                  "the other ranks to end; a rank silent longer is abandoned (exit 3)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  AddTableOutputFlags(cmd, &f->output);
}

TaskCounts TaskCounts::Of(const std::string& result) {
  TaskCounts c;
  Json j = Json::parse(result, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return c;
  c.records = j.value("records", uint64_t{0});
  c.skipped = j.value("skipped", uint64_t{0});
  c.bytes_in = j.value("bytes_in", uint64_t{0});
  return c;
}

std::string SchemaToJson(const std::map<std::string, format::FeatureSchema>& schema) {
  Json j = Json::object();
  for (const auto& [name, f] : schema) {
    j[name] = {static_cast<int>(f.type), f.values_per_record};
  }
  return j.dump();
}

namespace {

Result<std::map<std::string, format::FeatureSchema>> SchemaFromJson(const Json& j) {
  if (!j.is_object()) return DataLoss("malformed schema in a task result");
  std::map<std::string, format::FeatureSchema> schema;
  for (const auto& [name, f] : j.items()) {
    if (!f.is_array() || f.size() != 2 || !f[0].is_number_integer() || !f[1].is_number_integer())
      return DataLoss("malformed schema of feature \"" + name + "\" in a task result");
    schema[name] = {static_cast<format::FeatureType>(f[0].get<int>()), f[1].get<int64_t>()};
  }
  return schema;
}

}  // namespace

std::map<std::string, format::FeatureSchema> MergeSchemas(
    const std::vector<std::pair<uint64_t, std::map<std::string, format::FeatureSchema>>>& parts) {
  std::map<std::string, format::FeatureSchema> merged;
  std::map<std::string, uint64_t> holding;  // records of the parts that had the feature
  uint64_t records = 0;
  for (const auto& [n, schema] : parts) {
    if (n == 0) continue;
    for (const auto& [name, f] : schema) {
      auto [it, inserted] = merged.emplace(name, f);
      if (!inserted) {
        if (it->second.type == format::FeatureType::kNone) it->second.type = f.type;
        if (it->second.values_per_record != f.values_per_record) it->second.values_per_record = -1;
      }
      holding[name] += n;
    }
    records += n;
  }
  // A feature missing from some part's records has a varying count, as in one inference.
  for (auto& [name, f] : merged) {
    if (holding[name] != records) f.values_per_record = -1;
  }
  return merged;
}

Result<std::map<std::string, format::FeatureSchema>> SchemaOfResults(
    const std::vector<std::string>& results) {
  std::vector<std::pair<uint64_t, std::map<std::string, format::FeatureSchema>>> parts;
  for (size_t t = 0; t < results.size(); ++t) {
    Json r = Json::parse(results[t], nullptr, /*allow_exceptions=*/false);
    if (!r.is_object() || !r["schema"].is_string()) {
      return DataLoss("malformed result of task " + std::to_string(t));
    }
    Json schema = Json::parse(r["schema"].get<std::string>(), nullptr, false);
    SLUICE_ASSIGN_OR_RETURN(auto features, SchemaFromJson(schema));
    parts.emplace_back(TaskCounts::Of(results[t]).records, std::move(features));
  }
  return MergeSchemas(parts);
}

Result<uint64_t> TaskBytesFor(const ConvertJobFlags& flags, uint64_t total, int ranks) {
  if (flags.task_size == "auto") return dist::AutoTaskBytes(total, ranks);
  uint64_t bytes = 0;
  if (!ParseByteSize(flags.task_size, &bytes) || bytes == 0) {
    return InvalidArgument("--task-size " + flags.task_size + ": not a size (or auto)");
  }
  return bytes;
}

namespace {

std::string Identity(const ConvertJobSpec& spec, const std::vector<dist::InputFile>& files) {
  Json j = {{"command", spec.command},
            {"options", spec.options},
            {"task_size", spec.flags.task_size},
            {"codec", spec.output.codec},
            {"shard_size", spec.output.shard_size},
            {"prefix", spec.output.prefix},
            {"table", spec.flags.output.table},
            {"mode", spec.flags.output.mode}};
  for (const auto& f : files) j["inputs"].push_back({f.path, f.bytes});
  return j.dump();
}

void Summarize(const dist::ConvertJobResult& r, ConvertSummary* summary) {
  for (const std::string& result : r.results) {
    TaskCounts c = TaskCounts::Of(result);
    summary->records += c.records;
    summary->skipped += c.skipped;
    summary->bytes_in += c.bytes_in;
  }
  summary->shards = r.manifest.shards.size();
  for (const auto& shard : r.manifest.shards) summary->bytes_out += shard.file_bytes;
  std::string job = std::to_string(r.tasks) + " task(s)";
  if (r.reused > 0) job += ", " + std::to_string(r.reused) + " reused from an interrupted run";
  if (r.redone > 0) job += ", " + std::to_string(r.redone) + " converted again (Revise)";
  if (r.progress.speculative_copies > 0) {
    job += ", " + std::to_string(r.progress.speculative_copies) + " speculative cop" +
           (r.progress.speculative_copies == 1 ? "y" : "ies");
  }
  summary->notes.push_back(job);
}

// Every rank tells rank 0 it is done; rank 0 waits --exit-wait at most. A rank still silent
// (frozen) then is abandoned: MPI_Finalize would wait for it, so rank 0 ends the job with
// MPI_Abort and mpirun/srun end that rank. The output was published (or the job failed)
// before: nothing the silent rank writes later is part of it.
int EndConvertJob(dist::Transport* t, const ConvertJobSpec& spec, const Status& status) {
  auto silent = dist::EndJob(t, spec.flags.exit_wait);
  int code = FinishJob(*t, silent.ok() ? status : silent.status());
  if (t->rank() != 0 || !silent.ok() || silent->empty()) return code;
  std::string ranks;
  for (dist::Rank r : *silent) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  std::fprintf(stderr,
               "%s: %s; rank(s) %s did not end within %g s (--exit-wait): abandoning them "
               "(exit %d)\n",
               spec.command.c_str(),
               status.ok() ? "the output is published and complete" : "the job failed",
               ranks.c_str(), spec.flags.exit_wait, status.ok() ? kExitAbandoned : code);
  std::fflush(stdout);
  std::fflush(stderr);
  t->Abort(status.ok() ? kExitAbandoned : code);
  return code;
}

}  // namespace

TaskPlan FileTaskPlan(const ConvertJobFlags& flags, const std::vector<dist::InputFile>& files,
                      bool splittable) {
  return [flags, files, splittable](int ranks) -> Result<std::vector<dist::TaskSpec>> {
    uint64_t total = 0;
    for (const auto& f : files) total += f.bytes;
    SLUICE_ASSIGN_OR_RETURN(uint64_t task_bytes, TaskBytesFor(flags, total, ranks));
    return dist::FileTasks(files, task_bytes, splittable);
  };
}

int RunConvertCommand(const ConvertJobSpec& spec, const std::vector<dist::InputFile>& files,
                      const TaskPlan& plan, dist::TaskConverter* converter,
                      const std::vector<std::string>* notes) {
  Stopwatch clock;
  auto transport = OpenJobTransport();
  if (!transport.ok()) return ReportError(transport.status());
  dist::Transport* t = transport->get();
  auto run = [&]() -> Result<dist::ConvertJobResult> {
    SLUICE_ASSIGN_OR_RETURN(dist::JobOptions job,
                            MakeJobOptions(spec.flags.dist, *t, spec.command));
    dist::ConvertJobOptions o;
    o.tasks = job.tasks;
    SLUICE_ASSIGN_OR_RETURN(dist::OutputShards shards, OutputShardsFrom(spec.output));
    SLUICE_ASSIGN_OR_RETURN(o.output.shards, dist::ShardWriterOptionsFor(shards));
    o.output.overwrite = spec.output.overwrite;
    o.output.command = spec.command;
    o.output.identity = Identity(spec, files);
    o.output.table = spec.flags.output.table;
    o.output.table_overwrite = spec.flags.output.mode == "overwrite";
    std::vector<dist::TaskSpec> tasks;
    Status planned;
    if (t->rank() == 0) {
      auto made = plan(t->size());
      planned = made.status();
      if (made.ok()) tasks = std::move(*made);
    }
    SLUICE_RETURN_IF_ERROR(dist::AgreeOnStatus(t, planned));
    SLUICE_ASSIGN_OR_RETURN(Location out, Locate(spec.out));
    return dist::RunConvertJob(t, out.fs, out.path, std::move(tasks), converter, o);
  };
  auto result = run();
  if (result.ok() && t->rank() == 0) {
    ReportReclaimed(spec.out, result->reclaimed);
    ConvertSummary summary;
    Summarize(*result, &summary);
    if (result->table_version >= 0) {
      summary.table = (result->table_commit_duplicate ? "already committed as of version "
                                                      : "committed version ") +
                      std::to_string(result->table_version) + " of " + spec.out;
    }
    if (notes != nullptr) summary.notes.insert(summary.notes.end(), notes->begin(), notes->end());
    summary.seconds = clock.seconds();
    PrintSummary(summary);
  }
  return EndConvertJob(t, spec, result.status());
}

}  // namespace sluice::cli

#include "sluice/dist/job_output.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "dist/wire.h"
#include "sluice/base/utf8.h"
#include "sluice/format/shard_index.h"
#include "sluice/table/table.h"

namespace sluice::dist {
namespace {

using Json = nlohmann::json;

std::string Hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

Result<std::string> Unhex(std::string_view hex) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return DataLoss("odd-length hex string");
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = value(hex[2 * i]), lo = value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return DataLoss("not a hex string");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::string EncodeTasks(const std::vector<TaskSpec>& tasks) {
  WireWriter w;
  w.U64(tasks.size());
  for (const TaskSpec& t : tasks) {
    w.U64(t.id).U64(t.bytes).Bytes(t.input).U64(t.hosts.size());
    for (const auto& h : t.hosts) w.Bytes(h);
  }
  return w.Take();
}

Result<std::vector<TaskSpec>> DecodeTasks(std::string_view data) {
  WireReader in(data);
  uint64_t n = 0;
  if (!in.U64(&n) || n > data.size()) return DataLoss("malformed task list");
  std::vector<TaskSpec> tasks(n);
  for (uint64_t i = 0; i < n; ++i) {
    TaskSpec& t = tasks[i];
    uint64_t hosts = 0;
    if (!in.U64(&t.id) || !in.U64(&t.bytes) || !in.Bytes(&t.input) || !in.U64(&hosts) ||
        hosts > data.size() || t.id != i) {
      return DataLoss("malformed task list");
    }
    t.hosts.resize(hosts);
    for (auto& h : t.hosts) {
      if (!in.Bytes(&h)) return DataLoss("malformed task list");
    }
  }
  return tasks;
}

}  // namespace

std::string TaskOutput::Encode() const {
  Json shards_json = Json::array();
  for (const auto& s : shards) {
    shards_json.push_back({{"path", s.path},
                           {"records", s.records},
                           {"file_bytes", s.file_bytes},
                           {"index", s.index}});
  }
  return Json{{"shards", shards_json}, {"result", Hex(result)}}.dump();
}

Result<TaskOutput> TaskOutput::Decode(std::string_view text, const std::string& source) {
  TaskOutput out;
  try {
    Json j = Json::parse(text);
    for (const Json& s : j.at("shards")) {
      format::ManifestShard shard;
      shard.path = s.at("path").get<std::string>();
      shard.records = s.at("records").get<uint64_t>();
      shard.file_bytes = s.at("file_bytes").get<uint64_t>();
      shard.index = s.at("index").get<std::string>();
      out.shards.push_back(std::move(shard));
    }
    SLUICE_ASSIGN_OR_RETURN(out.result, Unhex(j.at("result").get<std::string>()));
  } catch (const Json::exception& e) {
    return DataLoss(source + ": " + EscapeBytes(e.what(), 300));
  }
  return out;
}

Result<std::unique_ptr<JobOutput>> JobOutput::Open(Transport* t, io::FileSystem* fs,
                                                   const std::string& dir,
                                                   const JobOutputOptions& options,
                                                   std::vector<TaskSpec>* tasks) {
  std::unique_ptr<JobOutput> out(new JobOutput());
  out->fs_ = fs;
  out->dir_ = dir;
  out->shard_options_ = options.shards;
  out->job_dir_ = options.identity.empty() ? "" : JobRecord::DirFor(options.identity);
  std::string state;
  if (t->rank() == 0) {
    Status begun = out->BeginOnRank0(options, tasks);
    WireWriter w;
    w.Error(begun).Bytes(out->run_).Bytes(EncodeTasks(*tasks));
    w.U64(out->reused_.size());
    for (TaskId id : out->reused_) w.U64(id);
    state = w.Take();
  }
  SLUICE_ASSIGN_OR_RETURN(state, t->Broadcast(std::move(state), 0));
  WireReader in(state);
  Status begun;
  std::string task_list;
  uint64_t reused = 0;
  if (!in.Error(&begun) || !in.Bytes(&out->run_) || !in.Bytes(&task_list) || !in.U64(&reused)) {
    return Internal("job output: malformed broadcast");
  }
  SLUICE_RETURN_IF_ERROR(begun);
  if (t->rank() != 0) {
    SLUICE_ASSIGN_OR_RETURN(*tasks, DecodeTasks(task_list));
    for (uint64_t i = 0; i < reused; ++i) {
      uint64_t id = 0;
      if (!in.U64(&id)) return Internal("job output: malformed broadcast");
      out->reused_.insert(id);
    }
  }
  return out;
}

Status JobOutput::BeginOnRank0(const JobOutputOptions& o, std::vector<TaskSpec>* tasks) {
  table_ = o.table;
  table_overwrite_ = o.table_overwrite;
  if (table_ && o.overwrite) {
    return InvalidArgument(dir_ +
                           ": --overwrite with --table: to replace the table's files with a "
                           "new version (older versions stay readable), use --mode overwrite");
  }
  SLUICE_RETURN_IF_ERROR(fs_->CreateDirs(dir_));
  // This job's own record: an interrupted run of the same job left its run id there, so its
  // files stay ours; a live run of the same job owning it refuses this one.
  if (!o.identity.empty()) {
    SLUICE_ASSIGN_OR_RETURN(record_, JobRecord::Acquire(fs_, dir_, o.identity, o.command));
  }
  run_ = record_ ? record_->run() : format::NewRunId();
  if (!table_) {  // the table's log orders writers: no lock, no dataset.json
    format::PublishOptions publish;
    publish.overwrite = o.overwrite;
    publish.command = o.command;
    publish.run_id = run_;
    SLUICE_ASSIGN_OR_RETURN(publisher_, format::DatasetPublisher::Begin(fs_, dir_, publish));
    // The dead runs' shards are reclaimed with the lock: their records could resume nothing.
    auto dead = FindDeadJobRecords(fs_, dir_);
    if (dead.ok()) {
      for (const auto& d : *dead) DeleteJobRecordTree(fs_, d.path);
    }
  }
  open_ = true;
  if (!record_) return Status::OK();
  if (record_->resuming()) {
    Status loaded = LoadJobRecord(tasks);
    if (loaded.ok()) return Status::OK();
    outputs_.clear();
    reused_.clear();
  }
  return record_->Start(tasks->size(), EncodeTasks(*tasks));
}

// The recorded task list and the recorded outputs whose files are all there, whole.
Status JobOutput::LoadJobRecord(std::vector<TaskSpec>* tasks) {
  SLUICE_ASSIGN_OR_RETURN(std::string list, record_->LoadTaskList());
  SLUICE_ASSIGN_OR_RETURN(*tasks, DecodeTasks(list));
  for (TaskId id = 0; id < tasks->size(); ++id) {
    const std::string path = record_->Path(JobRecord::TaskFileName(id));
    auto text = fs_->ReadAll(path);
    if (!text.ok()) continue;
    auto output = TaskOutput::Decode(*text, path);
    bool intact = output.ok();
    for (size_t i = 0; intact && i < output->shards.size(); ++i) {
      const format::ManifestShard& s = output->shards[i];
      auto info = fs_->Stat(io::JoinPath(dir_, s.path));
      intact = info.ok() && info->size == s.file_bytes &&
               (s.index.empty() || fs_->Exists(io::JoinPath(dir_, s.index)));
    }
    if (!intact) {
      (void)fs_->Delete(path);
      continue;
    }
    outputs_[id] = std::move(*output);
    reused_.insert(id);
  }
  return Status::OK();
}

void JobOutput::RemoveJobDir() {
  if (record_) record_->Remove();
  record_.reset();
}

JobOutput::~JobOutput() { Abort(); }

const std::vector<format::Leftover>& JobOutput::reclaimed() const {
  static const std::vector<format::Leftover> none;
  return publisher_ ? publisher_->reclaimed() : none;
}

Result<std::unique_ptr<format::ShardWriter>> JobOutput::OpenPart(const std::string& part) const {
  format::ShardWriterOptions o = shard_options_;
  o.run_id = run_;
  o.part = part;
  return format::ShardWriter::Open(fs_, dir_, o);
}

Status JobOutput::Record(TaskId task, TaskOutput output) {
  if (record_) {
    SLUICE_RETURN_IF_ERROR(
        fs_->WriteAll(record_->Path(JobRecord::TaskFileName(task)), output.Encode()));
  }
  outputs_[task] = std::move(output);
  return Status::OK();
}

const TaskOutput* JobOutput::Output(TaskId task) const {
  auto it = outputs_.find(task);
  return it == outputs_.end() ? nullptr : &it->second;
}

Result<std::string> JobOutput::WriteSideFile(std::string_view stem, std::string_view extension,
                                             ByteView data) {
  if (!open_) return FailedPrecondition("job output: side files are written by rank 0");
  if (!table_) return publisher_->WriteFile(stem, extension, data);
  std::string name = std::string(stem) + "-" + run_ + std::string(extension);
  SLUICE_RETURN_IF_ERROR(fs_->WriteAll(io::JoinPath(dir_, name), data));
  return name;
}

Status JobOutput::Publish(uint64_t tasks, format::Manifest manifest, format::Manifest* published) {
  std::vector<TaskOutput> outputs;
  for (TaskId t = 0; t < tasks; ++t) {
    const TaskOutput* output = Output(t);
    if (output == nullptr) return Internal("job output: task " + std::to_string(t) + " has none");
    outputs.push_back(*output);
  }
  return Publish(outputs, std::move(manifest), published);
}

Status JobOutput::Publish(const std::vector<TaskOutput>& outputs, format::Manifest manifest,
                          format::Manifest* published) {
  if (!open_) return FailedPrecondition("job output: rank 0 publishes");
  manifest.tool = std::string("sluice ") + SLUICE_VERSION;
  manifest.codec = shard_options_.record.codec;
  manifest.shards.clear();
  for (const TaskOutput& output : outputs) {
    manifest.shards.insert(manifest.shards.end(), output.shards.begin(), output.shards.end());
  }
  // The run's files the manifest does not list: losing copies, attempts cut short.
  std::set<std::string> listed;
  for (const std::string& f : manifest.Files()) listed.insert(f);
  SLUICE_ASSIGN_OR_RETURN(auto files, fs_->List(dir_));
  for (const auto& f : files) {
    const std::string name(io::Basename(f.path));
    if (!f.is_directory && format::RunIdOfFileName(name) == run_ && listed.count(name) == 0) {
      (void)fs_->Delete(f.path);
    }
  }
  // The commit point.
  SLUICE_RETURN_IF_ERROR(table_ ? CommitToTable(manifest) : publisher_->Commit(manifest));
  manifest.run = run_;
  RemoveJobDir();
  publisher_.reset();
  open_ = false;
  *published = std::move(manifest);
  return Status::OK();
}

Status JobOutput::CommitToTable(const format::Manifest& manifest) {
  std::vector<table::DataFile> files;
  for (const auto& shard : manifest.shards) {
    SLUICE_ASSIGN_OR_RETURN(table::DataFile f, table::DescribeShard(fs_, dir_, shard.path));
    files.push_back(std::move(f));
  }
  // The log's directory: a local file system does not create it on the first put (and the
  // commit would retry that put until max_attempts).
  SLUICE_RETURN_IF_ERROR(fs_->CreateDirs(io::JoinPath(dir_, "_delta_log")));
  table::CommitOptions c;
  // A rerun that resumes this run after a crash past the commit does not append twice.
  c.txn = table::TxnId{"sluice-job-" + run_, 1};
  c.create.features = manifest.features;
  for (const auto& [key, value] : manifest.metadata)
    c.create.configuration["sluice." + key] = value;
  if (table_overwrite_) {  // a table with no commit yet is created as by an append
    Result<table::Table> t = table::Table::Open(fs_, dir_);
    if (t.ok()) {
      SLUICE_ASSIGN_OR_RETURN(table_commit_, t->Overwrite(std::move(files), {}, c));
      return Status::OK();
    }
    if (t.status().code() != StatusCode::kNotFound) return t.status();
  }
  SLUICE_ASSIGN_OR_RETURN(table_commit_, table::Table::Append(fs_, dir_, std::move(files), c));
  return Status::OK();
}

void JobOutput::Abort() {
  if (!open_) return;
  open_ = false;
  if (table_) {  // every file of the run: nothing of it is in the table's log
    auto files = fs_->List(dir_);
    if (files.ok()) {
      for (const auto& f : *files) {
        if (!f.is_directory && format::RunIdOfFileName(io::Basename(f.path)) == run_) {
          (void)fs_->Delete(f.path);
        }
      }
    }
  } else {
    publisher_->Abort();
    publisher_.reset();
  }
  RemoveJobDir();
}

std::vector<TaskSpec> TasksToRun(const JobOutput& out, const std::vector<TaskSpec>& tasks,
                                 std::vector<TaskId>* original) {
  std::vector<TaskSpec> run;
  original->clear();
  for (const TaskSpec& t : tasks) {
    if (out.Reused(t.id)) continue;
    original->push_back(t.id);
    run.push_back(t);
    run.back().id = run.size() - 1;
  }
  return run;
}

}  // namespace sluice::dist

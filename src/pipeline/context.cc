#include "context.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "stage.h"

namespace sluice::pipeline {

namespace {

// The calling thread's schedstat file, opened once per thread (pool threads live as long as
// their pipeline; reading costs one pread).
class SchedStatFile {
 public:
  SchedStatFile() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~SchedStatFile() {
    if (fd_ >= 0) close(fd_);
  }
  SchedStatFile(const SchedStatFile&) = delete;
  SchedStatFile& operator=(const SchedStatFile&) = delete;
  ThreadClock Read() const {
    ThreadClock c;
    char buf[96];
    ssize_t n = fd_ >= 0 ? pread(fd_, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0) return c;
    buf[n] = 0;
    unsigned long long run = 0, wait = 0;
    if (std::sscanf(buf, "%llu %llu", &run, &wait) == 2) {
      c.run_ns = run;
      c.wait_ns = wait;
    }
    return c;
  }

 private:
  int fd_;
};

// "<shard>\t<index>\t<stage>\t<message>\n", the message on one line.
std::string QuarantineLine(const std::string& shard, const std::string& index,
                           const std::string& stage, const Status& error) {
  std::string message = error.ToString();
  std::replace(message.begin(), message.end(), '\n', ' ');
  return shard + "\t" + index + "\t" + stage + "\t" + message + "\n";
}

}  // namespace

ThreadClock ReadThreadClock() {
  thread_local SchedStatFile file;
  return file.Read();
}

uint64_t BusyNs(uint64_t wall_ns, const ThreadClock& a, const ThreadClock& b) {
  uint64_t waited = b.wait_ns >= a.wait_ns ? b.wait_ns - a.wait_ns : 0;
  return wall_ns - std::min(wall_ns, waited);
}

StageStats StageCounters::Snapshot() const {
  auto sec = [](const std::atomic<uint64_t>& ns) { return ns.load() * 1e-9; };
  StageStats s;
  s.name = name;
  s.elements = elements.load();
  s.bytes = bytes.load();
  s.busy_seconds = sec(busy_ns);
  s.input_wait_seconds = sec(input_wait_ns);
  s.output_wait_seconds = sec(output_wait_ns);
  s.buffered = buffered.load();
  s.buffer_capacity = capacity.load();
  s.parallelism = parallelism.load();
  uint64_t all = chunks.load();
  s.consumer_share = all ? static_cast<double>(helped_chunks.load()) / static_cast<double>(all) : 0;
  s.skipped = skipped.load();
  s.quarantined = quarantined.load();
  s.chunk_decodes = chunk_decodes.load();
  s.chunk_fetched_bytes = chunk_fetched_bytes.load();
  s.chunk_loads_on_demand = chunk_loads_on_demand.load();
  s.chunk_evictions = chunk_evictions.load();
  s.chunk_takes = chunk_takes.load();
  s.chunk_kept = chunk_kept.load();
  return s;
}

Status QuarantineSink::OpenLocked() {
  if (file_) return Status::OK();
  if (path_.empty()) {
    return InvalidArgument("on_error = quarantine needs PipelineOptions::quarantine_path");
  }
  auto file = fs_->OpenForWrite(path_);
  if (!file.ok()) {
    return file.status().WithContext("on_error = quarantine: cannot write the quarantine file " +
                                     path_);
  }
  file_ = std::move(*file);
  return Status::OK();
}

Status QuarantineSink::Open() {
  std::lock_guard<std::mutex> l(mu_);
  return OpenLocked();
}

Status QuarantineSink::Add(const std::string& line) {
  std::lock_guard<std::mutex> l(mu_);
  SLUICE_RETURN_IF_ERROR(OpenLocked());
  return file_->Append(line);
}

Status QuarantineSink::Close() {
  std::lock_guard<std::mutex> l(mu_);
  if (!file_) return Status::OK();
  Status s = file_->Close();
  file_.reset();
  return s;
}

PipelineContext::PipelineContext(const PipelineOptions& options, ThreadPool* pool,
                                 BufferPool* buffers, MemoryBudget* budget,
                                 QuarantineSink* quarantine)
    : options_(options),
      pool_(pool),
      cpus_(ThreadPool::DefaultThreads()),
      buffers_(buffers),
      budget_(budget),
      quarantine_(quarantine) {}

void PipelineContext::RegisterGraph(const DatasetNode* root) {
  nodes_.clear();
  for (const DatasetNode* n = root; n != nullptr; n = n->input()) nodes_.push_back(n);
  std::reverse(nodes_.begin(), nodes_.end());
  counters_.clear();
  for (const DatasetNode* n : nodes_) {
    counters_.push_back(std::make_unique<StageCounters>());
    counters_.back()->name = n->name();
  }
}

size_t PipelineContext::NodeIndex(const DatasetNode* node) const {
  auto it = std::find(nodes_.begin(), nodes_.end(), node);
  return static_cast<size_t>(it - nodes_.begin());
}

std::string PipelineContext::StateKey(const DatasetNode* node) const {
  // Prefetch stages hold no state and are not counted, so a state restores into the same
  // pipeline with or without prefetch.
  size_t index = 0;
  for (size_t i = 0; i < NodeIndex(node); ++i) index += nodes_[i]->kind() != "prefetch";
  return std::to_string(index) + "." + std::string(node->kind());
}

StageCounters* PipelineContext::Counters(const DatasetNode* node) {
  return counters_.at(NodeIndex(node)).get();
}

Result<size_t> PipelineContext::CounterSlot(const DatasetNode* node) {
  std::lock_guard<std::mutex> l(slots_mu_);
  auto it = slots_.find(node);
  if (it != slots_.end()) return it->second;
  if (slots_.size() == kMaxStageCounters) {
    return InvalidArgument("pipeline has more than " + std::to_string(kMaxStageCounters) +
                           " counting stages (take, skip, buffer shuffle, bucket_by_length)");
  }
  size_t slot = slots_.size();
  slots_[node] = slot;
  return slot;
}

std::vector<StageStats> PipelineContext::SnapshotStages() const {
  std::vector<StageStats> out;
  for (const auto& c : counters_) out.push_back(c->Snapshot());
  return out;
}

std::string PipelineContext::DescribeRecord(const RecordId& id) const {
  std::string shard = source_ && id.shard < source_->shard_records().size()
                          ? source_->shard_name(id.shard)
                          : std::to_string(id.shard);
  return "shard '" + shard + "' record " + std::to_string(id.index) + " (epoch " +
         std::to_string(id.epoch) + ", position " + std::to_string(id.position) + ")";
}

Status PipelineContext::OnRecordError(StageCounters* stage, ErrorPolicy policy, const RecordId& id,
                                      const Status& error) {
  if (error.code() == StatusCode::kCancelled) return error;
  if (policy == ErrorPolicy::kRaise || error.code() == StatusCode::kIoError) {
    return error.WithContext(stage->name + ": " + DescribeRecord(id));
  }
  stage->Add(stage->skipped, 1);
  if (policy == ErrorPolicy::kQuarantine) {
    std::string shard = source_ ? source_->shard_name(id.shard) : std::to_string(id.shard);
    SLUICE_RETURN_IF_ERROR(
        quarantine_->Add(QuarantineLine(shard, std::to_string(id.index), stage->name, error)));
    stage->Add(stage->quarantined, 1);
  }
  return Status::OK();
}

Status PipelineContext::OnSourceDamage(StageCounters* stage, ErrorPolicy policy) {
  if (source_ == nullptr) return Status::OK();
  for (const SourceDamage& d : source_->damage()) {
    if (policy == ErrorPolicy::kRaise) {
      return d.error.WithContext(stage->name + ": shard '" + source_->shard_name(d.shard) +
                                 "' is damaged (on_error = skip or quarantine reads its " +
                                 std::to_string(source_->shard_records()[d.shard]) +
                                 " intact records)");
    }
    stage->Add(stage->skipped, std::max<uint64_t>(1, d.records_lost));
    if (policy == ErrorPolicy::kQuarantine) {
      SLUICE_RETURN_IF_ERROR(quarantine_->Add(
          QuarantineLine(source_->shard_name(d.shard), "-", stage->name, d.error)));
      stage->Add(stage->quarantined, 1);
    }
  }
  return Status::OK();
}

void PipelineContext::AddTunable(Tunable* t) {
  std::lock_guard<std::mutex> l(tunables_mu_);
  tunables_.push_back(t);
}

void PipelineContext::RemoveTunable(Tunable* t) {
  std::lock_guard<std::mutex> l(tunables_mu_);
  tunables_.erase(std::remove(tunables_.begin(), tunables_.end(), t), tunables_.end());
}

std::string_view ErrorPolicyName(ErrorPolicy policy) {
  switch (policy) {
    case ErrorPolicy::kRaise:
      return "raise";
    case ErrorPolicy::kSkip:
      return "skip";
    case ErrorPolicy::kQuarantine:
      return "quarantine";
  }
  return "?";
}

Result<ErrorPolicy> ParseErrorPolicy(std::string_view name) {
  for (ErrorPolicy p : {ErrorPolicy::kRaise, ErrorPolicy::kSkip, ErrorPolicy::kQuarantine}) {
    if (ErrorPolicyName(p) == name) return p;
  }
  return InvalidArgument("unknown on_error policy '" + std::string(name) +
                         "' (expected raise, skip or quarantine)");
}

void PipelineContext::SetSlotPlanner(const DatasetNode* map, std::shared_ptr<SlotPlanner> planner) {
  std::lock_guard<std::mutex> l(planners_mu_);
  planners_[map] = std::move(planner);
}

std::shared_ptr<SlotPlanner> PipelineContext::SlotPlannerFor(const DatasetNode* map) {
  std::lock_guard<std::mutex> l(planners_mu_);
  auto it = planners_.find(map);
  return it == planners_.end() ? nullptr : it->second;
}

}  // namespace sluice::pipeline

#include "cli/dist_job.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli/common.h"
#include "dist/wire.h"
#include "sluice/base/bytes.h"
#include "sluice/dist/job_record.h"
#include "sluice/dist/launch.h"
#include "sluice/dist/mpi_transport.h"

namespace sluice::cli {

void AddDistFlags(CLI::App* cmd, DistFlags* f) {
  AddSchedulingFlags(cmd, f);
  AddKeyedJobFlags(cmd, f);
}

void AddSchedulingFlags(CLI::App* cmd, DistFlags* f) {
  cmd->add_flag("--no-speculation", f->no_speculation,
                "never run speculative copies of straggling tasks");
  cmd->add_option("--speculation-quantile", f->speculation_quantile,
                  "fraction of tasks finished before stragglers get copies")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--speculation-multiplier", f->speculation_multiplier,
                  "a task running this many times the median is a straggler")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--locality-wait", f->locality_wait,
                  "seconds a task waits for a rank on the node holding its input")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--local-inputs", f->local_inputs,
                  "a directory whose files are on each node's own disk (repeatable): a task "
                  "reading one runs on a node that has it")
      ->allow_extra_args(false);
}

namespace {
constexpr const char* kKeyedJobFlags[] = {"--memory-budget", "--spill-dir", "--no-combine",
                                          "--no-salt"};
}  // namespace

void AddKeyedJobFlags(CLI::App* cmd, DistFlags* f) {
  cmd->add_option("--memory-budget", f->memory_budget,
                  "per rank, for exchange buffers and aggregation state; past it, spill to disk")
      ->check(ByteSizeValidator())
      ->capture_default_str();
  cmd->add_option("--spill-dir", f->spill_dir,
                  "local directory for spills (default: $TMPDIR or /tmp)");
  cmd->add_flag("--no-combine", f->no_combine, "no per-rank combiner before the exchange");
  cmd->add_flag("--no-salt", f->no_salt, "do not spread hot keys over the ranks");
}

void RefuseKeyedJobFlags(CLI::App* cmd) {
  for (const char* name : kKeyedJobFlags) {
    // Hidden (no group): accepted by the parser only to be refused with a reason.
    cmd->add_option_function<std::string>(
           name,
           [flag = std::string(name)](const std::string&) {
             throw CLI::ValidationError(
                 flag,
                 "applies to sluice stats, dedup and reshard (their keyed aggregation and "
                 "exchanges), not to convert, which has no aggregation state to budget, "
                 "spill or combine");
           })
        ->expected(0, 1)
        ->group("");
  }
}

Result<std::unique_ptr<dist::Transport>> OpenJobTransport() {
  SLUICE_ASSIGN_OR_RETURN(dist::Launcher launcher, dist::DetectLauncher(std::getenv));
  if (launcher == dist::Launcher::kNone) return std::move(dist::InProcessGroup(1)[0]);
  return dist::OpenMpiTransport();
}

namespace {

// SLUICE_FAULT_SLOW_TASK=TASK:SECONDS, SLUICE_FAULT_SLOW_RANK=RANK:FACTOR (tests, benches).
Status ReadFaults(dist::FaultOptions* faults) {
  auto pair = [](const char* name, double* a, double* b) -> Status {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return Status::OK();
    if (std::sscanf(v, "%lf:%lf", a, b) != 2)
      return InvalidArgument(std::string(name) + "=" + v + ": expected N:X");
    return Status::OK();
  };
  double task = -1, rank = -1;
  SLUICE_RETURN_IF_ERROR(pair("SLUICE_FAULT_SLOW_TASK", &task, &faults->slow_task_seconds));
  SLUICE_RETURN_IF_ERROR(pair("SLUICE_FAULT_SLOW_RANK", &rank, &faults->slow_rank_factor));
  faults->slow_task = static_cast<int64_t>(task);
  faults->slow_rank = static_cast<dist::Rank>(rank);
  return Status::OK();
}

std::string Count(double v) {
  char text[32];
  if (v >= 1e6) {
    std::snprintf(text, sizeof(text), "%.1fM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(text, sizeof(text), "%.1fk", v / 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%.0f", v);
  }
  return text;
}

// Rank 0's progress line: redrawn in place on a terminal, a line every 5 s otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(std::string label)
      : label_(std::move(label)), tty_(::isatty(STDERR_FILENO) == 1) {}
  void Commit(const std::string& result) {
    uint64_t n = 0;
    if (dist::WireReader(result).U64(&n)) records_ += n;
  }
  void Show(const dist::JobProgress& p, double elapsed) {
    bool last = p.committed == p.tasks;
    if (!tty_ && !last && elapsed - last_ < 5) return;
    if (!tty_ && last && printed_last_) return;
    last_ = elapsed;
    printed_last_ = last;
    double rate = elapsed > 0 ? static_cast<double>(records_) / elapsed : 0;
    double share = p.input_bytes > 0 ? static_cast<double>(p.committed_bytes) / p.input_bytes
                                     : (p.tasks ? static_cast<double>(p.committed) / p.tasks : 1);
    std::string eta =
        share > 0 && !last
            ? std::to_string(static_cast<long>(std::ceil(elapsed * (1 - share) / share))) + " s"
            : "-";
    std::fprintf(
        stderr,
        "%s%s: tasks %llu/%llu, %s records/s, ETA %s, %llu straggler(s), %llu speculative cop%s%s",
        tty_ ? "\r" : "", label_.c_str(), static_cast<unsigned long long>(p.committed),
        static_cast<unsigned long long>(p.tasks), Count(rate).c_str(), eta.c_str(),
        static_cast<unsigned long long>(p.stragglers),
        static_cast<unsigned long long>(p.speculative_copies),
        p.speculative_copies == 1 ? "y" : "ies", tty_ ? (last ? "\x1b[K\n" : "\x1b[K") : "\n");
    std::fflush(stderr);
  }

 private:
  const std::string label_;
  const bool tty_;
  uint64_t records_ = 0;
  double last_ = -1e9;
  bool printed_last_ = false;
};

}  // namespace

Result<dist::JobOptions> MakeJobOptions(const DistFlags& f, const dist::Transport& transport,
                                        const std::string& label) {
  dist::JobOptions o;
  auto& s = o.tasks.scheduler;
  s.speculation.enabled = !f.no_speculation;
  s.speculation.quantile = f.speculation_quantile;
  s.speculation.multiplier = f.speculation_multiplier;
  s.locality.wait = f.locality_wait;
  s.locality.local_input_dirs = f.local_inputs;
  if (!ParseByteSize(f.memory_budget, &o.memory_budget)) {
    return InvalidArgument("--memory-budget " + f.memory_budget + ": not a size");
  }
  o.spill_dir = f.spill_dir;
  if (o.spill_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o.spill_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  o.combine = !f.no_combine;
  o.salt_hot_keys = !f.no_salt;
  SLUICE_RETURN_IF_ERROR(ReadFaults(&o.tasks.faults));
  if (transport.rank() == 0) {
    auto line = std::make_shared<ProgressLine>(label);
    o.tasks.on_commit = [line](dist::TaskId, const std::string& r) { line->Commit(r); };
    o.tasks.on_progress = [line](const dist::JobProgress& p, double t) { line->Show(p, t); };
    o.tasks.progress_interval = 0.2;
  }
  return o;
}

Result<dist::OutputShards> OutputShardsFrom(const OutputOptions& options) {
  dist::OutputShards out;
  out.codec = options.codec;
  out.prefix = options.prefix;
  out.overwrite = options.overwrite;
  if (!ParseByteSize(options.shard_size, &out.shard_bytes)) {
    return InvalidArgument("--shard-size " + options.shard_size + ": not a size");
  }
  return out;
}

void AddTableOutputFlags(CLI::App* cmd, TableOutputFlags* f) {
  CLI::Option* table = cmd->add_flag(
      "--table", f->table,
      "OUT is a sluice table (created if absent): the output is one commit (docs/table.md)");
  cmd->add_option("--mode", f->mode,
                  "with --table: append (add the output to the table's files) or overwrite "
                  "(the new version holds only the output; older versions stay readable)")
      ->check(CLI::IsMember({"append", "overwrite"}))
      ->needs(table)
      ->capture_default_str();
}

void ApplyTableOutputFlags(const TableOutputFlags& flags, dist::OutputShards* shards) {
  shards->table = flags.table;
  shards->table_overwrite = flags.table && flags.mode == "overwrite";
}

Result<std::vector<format::Leftover>> ReclaimDeadJobRecords(const Location& where, bool dry_run) {
  SLUICE_ASSIGN_OR_RETURN(auto dead, dist::FindDeadJobRecords(where.fs, where.path));
  if (!dry_run) {
    for (const auto& d : dead) dist::DeleteJobRecordTree(where.fs, d.path);
  }
  return dead;
}

int FinishJob(const dist::Transport& transport, const Status& status) {
  if (status.ok()) return kExitOk;
  // The job's errors are agreed on by every rank (task reports, exchange rounds): rank 0 says it.
  return transport.rank() == 0 ? ReportError(status) : kExitFailure;
}

}  // namespace sluice::cli

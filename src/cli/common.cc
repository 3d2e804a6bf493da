#include "cli/common.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "sluice/base/bytes.h"
#include "sluice/format/record.h"
#include "sluice/io/fault_injection_file_system.h"

namespace sluice::cli {

int ReportError(const Status& status) {
  std::fprintf(stderr, "sluice: error: %s\n", status.message().c_str());
  return kExitFailure;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "sluice: warning: %s\n", message.c_str());
}

namespace {

// One fault-injection wrapper per file system (local, each S3 endpoint, each NameNode), made
// the first time a Location names it and never destroyed; the counts of all are printed at
// exit. Guarded by its mutex: the distributed jobs locate paths from several threads.
struct FaultInjectionWrappers {
  std::mutex mu;
  std::map<io::FileSystem*, std::unique_ptr<io::FaultInjectionFileSystem>> by_base;
};

FaultInjectionWrappers& Wrappers() {
  static auto* wrappers = new FaultInjectionWrappers;
  return *wrappers;
}

void PrintFaultCounts() {
  FaultInjectionWrappers& w = Wrappers();
  std::lock_guard<std::mutex> lock(w.mu);
  for (const auto& [base, wrapper] : w.by_base) {
    std::fprintf(stderr, "sluice: fault injection: %s\n", wrapper->CountsText().c_str());
  }
}

// The file system behind a Location: under the plan of SLUICE_FAULT_INJECTION (read once),
// the wrapper of the very file system the path names.
Result<io::FileSystem*> WithFaultInjection(io::FileSystem* fs) {
  static const Result<std::optional<io::FaultPlan>> plan = io::FaultPlanFromEnvironment();
  SLUICE_RETURN_IF_ERROR(plan.status());
  if (!plan->has_value()) return fs;
  FaultInjectionWrappers& w = Wrappers();
  std::lock_guard<std::mutex> lock(w.mu);
  auto& wrapper = w.by_base[fs];
  if (wrapper == nullptr) {
    if (w.by_base.size() == 1) std::atexit(PrintFaultCounts);
    wrapper = std::make_unique<io::FaultInjectionFileSystem>(fs, **plan);
  }
  return static_cast<io::FileSystem*>(wrapper.get());
}

}  // namespace

Result<Location> Locate(const std::string& uri) {
  Location loc;
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * fs, io::FileSystemFor(uri, &loc.path));
  SLUICE_ASSIGN_OR_RETURN(loc.fs, WithFaultInjection(fs));
  return loc;
}

void AddOutputOptions(CLI::App* command, OutputOptions* options) {
  command->add_option("--codec", options->codec, "shard compression: zstd, gzip or none")
      ->check(CodecValidator())
      ->capture_default_str();
  command
      ->add_option("--shard-size", options->shard_size,
                   "target file size of each shard (e.g. 100MB, 1GiB)")
      ->check(ByteSizeValidator())
      ->capture_default_str();
  command->add_option("--prefix", options->prefix, "shard file name prefix")->capture_default_str();
  command->add_flag("--overwrite", options->overwrite,
                    "replace a dataset already in OUT (atomically, once the new one is complete)");
}

Result<std::unique_ptr<format::ShardWriter>> OpenShardWriter(const Location& out,
                                                             const OutputOptions& options,
                                                             const std::string& command) {
  format::ShardWriterOptions writer;
  SLUICE_ASSIGN_OR_RETURN(writer.record.codec, format::ParseCodec(options.codec));
  if (!ParseByteSize(options.shard_size, &writer.target_shard_bytes)) {
    return InvalidArgument("--shard-size " + options.shard_size + ": not a size");
  }
  writer.prefix = options.prefix;
  writer.overwrite = options.overwrite;
  writer.command = command;
  SLUICE_ASSIGN_OR_RETURN(auto w, format::ShardWriter::Open(out.fs, out.path, writer));
  ReportReclaimed(out.path, w->reclaimed());
  return w;
}

void ReportReclaimed(const std::string& dir, const std::vector<format::Leftover>& reclaimed) {
  if (reclaimed.empty()) return;
  Warn("reclaimed " + std::to_string(reclaimed.size()) + " file(s) in " + dir +
       " left by interrupted runs (first: " + reclaimed.front().path + ": " +
       reclaimed.front().reason + ")");
}

const CLI::Validator& ByteSizeValidator() {
  static const CLI::Validator validator(
      [](const std::string& text) -> std::string {
        uint64_t bytes = 0;
        if (!ParseByteSize(text, &bytes) || bytes == 0) {
          return "'" + text + "' is not a size like 100MB, 512KiB or 1GB";
        }
        return "";
      },
      "SIZE", "byte size");
  return validator;
}

const CLI::Validator& CodecValidator() {
  static const CLI::Validator validator(
      [](const std::string& text) -> std::string {
        return format::ParseCodec(text).ok() ? "" : "codec must be zstd, gzip or none";
      },
      "CODEC", "codec");
  return validator;
}

}  // namespace sluice::cli

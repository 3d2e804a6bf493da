#include "cli/common.h"

#include <cstdio>

#include "sluice/base/bytes.h"
#include "sluice/format/record.h"

namespace sluice::cli {

int ReportError(const Status& status) {
  std::fprintf(stderr, "sluice: error: %s\n", status.message().c_str());
  return kExitFailure;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "sluice: warning: %s\n", message.c_str());
}

Result<Location> Locate(const std::string& uri) {
  Location loc;
  SLUICE_ASSIGN_OR_RETURN(loc.fs, io::FileSystemFor(uri, &loc.path));
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
}

Result<std::unique_ptr<format::ShardWriter>> OpenShardWriter(const Location& out,
                                                             const OutputOptions& options) {
  format::ShardWriterOptions writer;
  SLUICE_ASSIGN_OR_RETURN(writer.record.codec, format::ParseCodec(options.codec));
  if (!ParseByteSize(options.shard_size, &writer.target_shard_bytes)) {
    return InvalidArgument("--shard-size " + options.shard_size + ": not a size");
  }
  writer.prefix = options.prefix;
  return format::ShardWriter::Open(out.fs, out.path, writer);
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

// `sluice index FILE...`: writes "<FILE>.idx" for TFRecord files made by other tools, so
// that sluice can read them by record number.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/progress.h"
#include "sluice/format/shard_index.h"

namespace sluice::cli {
namespace {

Status IndexOne(const std::string& uri) {
  Stopwatch clock;
  SLUICE_ASSIGN_OR_RETURN(Location where, Locate(uri));
  SLUICE_ASSIGN_OR_RETURN(auto index, format::ShardIndex::Build(where.fs, where.path));
  std::string index_path = format::ShardIndex::IndexPathFor(where.path);
  SLUICE_RETURN_IF_ERROR(index.Save(where.fs, index_path));
  fmt::print("{}: {} records, codec {}, indexed in {:.2f} s -> {}\n", uri, index.num_records(),
             format::CodecName(index.codec()), clock.seconds(), index_path);
  if (index.codec() == format::Codec::kGzip) {
    // A gzip stream has no restart points: the index can only say where a record sits in
    // the decompressed stream, and reaching it means inflating everything before it.
    fmt::print(
        "{}: note: gzip allows no random access; reading record i decompresses the file from "
        "its start. Rewrite it with zstd (sluice's default codec) for fast random access.\n",
        uri);
  }
  return Status::OK();
}

}  // namespace

void AddIndexCommand(CLI::App* app, int* exit_code) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app->add_subcommand("index", "Build <FILE>.idx for existing TFRecord files");
  cmd->footer(
      "For TFRecord files written by other tools (uncompressed or gzip): reads each file once, "
      "checking every CRC, and writes the index next to it.");
  cmd->add_option("FILE", *files, "TFRecord files")->required();
  cmd->callback([files, exit_code] {
    *exit_code = kExitOk;
    for (const auto& file : *files) {
      Status s = IndexOne(file);
      if (!s.ok()) *exit_code = ReportError(s);
    }
  });
}

}  // namespace sluice::cli

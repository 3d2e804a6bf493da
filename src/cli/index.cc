// `sluice index [--recover] FILE...`: writes "<FILE>.idx" for TFRecord files made by other
// tools, so that sluice can read them by record number; --recover rewrites a damaged shard
// with the records that still read intact.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/progress.h"
#include "sluice/format/shard_index.h"
#include "sluice/format/shard_recovery.h"

namespace sluice::cli {
namespace {

Status IndexOne(const std::string& uri) {
  Stopwatch clock;
  SLUICE_ASSIGN_OR_RETURN(Location where, Locate(uri));
  auto built = format::ShardIndex::Build(where.fs, where.path);
  if (!built.ok() && built.status().code() == StatusCode::kDataLoss) {
    return built.status().WithContext(
        "cannot index a damaged shard (`sluice index --recover` keeps its intact records)");
  }
  SLUICE_ASSIGN_OR_RETURN(auto index, std::move(built));
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

Status RecoverOne(const std::string& uri) {
  SLUICE_ASSIGN_OR_RETURN(Location where, Locate(uri));
  SLUICE_ASSIGN_OR_RETURN(format::ShardRecoveryReport r,
                          format::RecoverShard(where.fs, where.path));
  if (r.lost.empty()) {
    fmt::print("{}: no damage: {} records, codec {}; index written\n", uri, r.records,
               format::CodecName(r.codec));
    return Status::OK();
  }
  uint64_t bytes = 0;
  for (const auto& range : r.lost) bytes += range.length;
  const format::SkippedRange& first = r.lost.front();
  fmt::print(
      "{}: kept {} intact records (codec {}); lost {} damaged range(s), {} bytes, the first at "
      "{}offset {} ({}); the damaged original is {}\n",
      uri, r.records, format::CodecName(r.codec), r.lost.size(), bytes,
      first.in_compressed_file ? "file " : "", first.offset, first.reason, r.damaged_path);
  Warn(uri + ": records were lost; a dataset.json listing this shard no longer matches it");
  return Status::OK();
}

}  // namespace

void AddIndexCommand(CLI::App* cmd, int* exit_code) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto recover = std::make_shared<bool>(false);
  cmd->footer(
      "For TFRecord files written by other tools (uncompressed or gzip): reads each file once, "
      "checking every CRC, and writes the index next to it. A damaged file is an error; "
      "--recover rewrites it with the records that still read intact (same codec, new index) "
      "and keeps the damaged original as FILE.damaged.");
  cmd->add_option("FILE", *files, "TFRecord files")->required();
  cmd->add_flag("--recover", *recover,
                "rewrite damaged (e.g. truncated) shards with their intact records");
  cmd->callback([files, recover, exit_code] {
    *exit_code = kExitOk;
    for (const auto& file : *files) {
      Status s = *recover ? RecoverOne(file) : IndexOne(file);
      if (!s.ok()) *exit_code = ReportError(s);
    }
  });
}

}  // namespace sluice::cli

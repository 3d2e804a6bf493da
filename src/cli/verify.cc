// `sluice verify PATH`: reads every record (checking both CRCs of each), then checks every
// index entry against the shard, and a manifest's counts against the shards. Prints one
// "file:offset: problem" line per fault; exit 0 when clean, 1 otherwise.
#include <fmt/core.h>

#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "sluice/base/crc32c.h"
#include "sluice/format/dataset_publisher.h"
#include "sluice/format/manifest.h"
#include "sluice/format/record_reader.h"
#include "sluice/format/shard_index.h"

namespace sluice::cli {
namespace {

// Collects and prints faults as they are found.
class FaultLog {
 public:
  void Add(const std::string& file, std::optional<uint64_t> offset, std::string problem) {
    // Library messages usually start with the file name already.
    if (problem.starts_with(file + ": ")) problem.erase(0, file.size() + 2);
    if (offset) {
      fmt::print("{}:{}: {}\n", file, *offset, problem);
    } else {
      fmt::print("{}: {}\n", file, problem);
    }
    ++count_;
  }
  uint64_t count() const { return count_; }

 private:
  uint64_t count_ = 0;
};

// What the sequential pass saw: one CRC per record, to compare with what the index finds.
struct ShardScan {
  std::vector<uint32_t> record_crcs;
  bool clean = true;
};

// Reads the whole shard in skip mode, so that every damaged range is reported, not only
// the first.
ShardScan ScanRecords(io::FileSystem* fs, const std::string& shard, FaultLog* faults) {
  ShardScan scan;
  format::RecordReaderOptions options;
  options.policy = format::CorruptionPolicy::kSkip;
  auto reader = format::RecordReader::Open(fs, shard, options);
  if (!reader.ok()) {
    faults->Add(shard, std::nullopt, reader.status().message());
    scan.clean = false;
    return scan;
  }
  ByteView record;
  Status error;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) {
      error = more.status();  // unrecoverable even when skipping (e.g. an I/O error)
      break;
    }
    if (!*more) break;
    scan.record_crcs.push_back(crc32c::Value(record));
  }
  // Offsets are file offsets for uncompressed shards and for undecodable compressed data;
  // otherwise they count bytes of the decompressed record stream (docs/format.md, 5.).
  const bool stream_offsets = (*reader)->codec() != format::Codec::kNone;
  for (const auto& range : (*reader)->skipped()) {
    std::string where = stream_offsets && !range.in_compressed_file
                            ? " bytes of the decompressed stream skipped)"
                            : " bytes skipped)";
    faults->Add(shard, range.offset, range.reason + " (" + std::to_string(range.length) + where);
  }
  if (!error.ok()) faults->Add(shard, std::nullopt, error.message());
  scan.clean = error.ok() && (*reader)->skipped().empty();
  return scan;
}

// Where an index entry points in the shard file: the record itself for uncompressed
// shards, the start of its frame otherwise.
std::optional<uint64_t> EntryOffset(const format::ShardReader& reader, uint64_t i) {
  format::IndexRecord entry;
  format::IndexFrame frame;
  if (!reader.Locate(i, &entry, &frame).ok()) return std::nullopt;
  return reader.codec() == format::Codec::kNone ? frame.file_offset + entry.offset_in_frame
                                                : frame.file_offset;
}

// Reads every record through the index and compares it with the sequential pass.
void CheckIndex(io::FileSystem* fs, const std::string& shard, const ShardScan& scan,
                FaultLog* faults) {
  std::string index_path = format::ShardIndex::IndexPathFor(shard);
  format::ShardReaderOptions options;
  options.build_missing_index = false;
  auto reader = format::ShardReader::Open(fs, shard, options);
  if (!reader.ok()) {
    faults->Add(index_path, std::nullopt, reader.status().message());
    return;
  }
  const format::ShardReader& index = **reader;
  if (index.num_records() != scan.record_crcs.size()) {
    faults->Add(index_path, std::nullopt,
                fmt::format("lists {} records but the shard holds {}", index.num_records(),
                            scan.record_crcs.size()));
  }
  std::string payload;
  for (uint64_t i = 0; i < index.num_records(); ++i) {
    Status s = index.Read(i, &payload);
    if (!s.ok()) {
      faults->Add(shard, EntryOffset(index, i), fmt::format("index entry {}: {}", i, s.message()));
    } else if (i < scan.record_crcs.size() && crc32c::Value(payload) != scan.record_crcs[i]) {
      faults->Add(shard, EntryOffset(index, i),
                  fmt::format("index entry {} points at another record than record {}", i, i));
    }
  }
}

// A manifest's per-shard counts must match the shards they describe. `records` holds the
// count of each clean shard, nullopt for a damaged one (already reported, count unknown).
void CheckManifest(const format::Manifest& m, const std::string& dir,
                   const std::vector<std::optional<uint64_t>>& records, io::FileSystem* fs,
                   FaultLog* faults) {
  std::string path = io::JoinPath(dir, format::Manifest::kFileName);
  for (size_t i = 0; i < m.shards.size() && i < records.size(); ++i) {
    const auto& entry = m.shards[i];
    if (records[i] && entry.records != *records[i]) {
      faults->Add(path, std::nullopt,
                  fmt::format("{}: manifest says {} records, the shard holds {}", entry.path,
                              entry.records, *records[i]));
    }
    auto info = fs->Stat(io::JoinPath(dir, entry.path));
    if (info.ok() && info->size != entry.file_bytes) {
      faults->Add(path, std::nullopt,
                  fmt::format("{}: manifest says {} bytes, the file has {}", entry.path,
                              entry.file_bytes, info->size));
    }
  }
}

// Files in a dataset directory that the dataset does not use, left by interrupted runs:
// reported, not counted as faults (the published dataset is whole without them).
void ReportLeftovers(io::FileSystem* fs, const std::string& dir, const format::Manifest& m) {
  auto leftovers = format::FindLeftovers(fs, dir, &m);
  if (!leftovers.ok() || leftovers->empty()) return;
  constexpr size_t kListed = 10;  // a crashed run over thousands of shards: name a few
  for (size_t i = 0; i < leftovers->size() && i < kListed; ++i) {
    Warn((*leftovers)[i].path + ": not part of the dataset: " + (*leftovers)[i].reason);
  }
  Warn(fmt::format("{} file(s) left by interrupted runs: `sluice clean {}` removes them",
                   leftovers->size(), dir));
}

int RunVerify(const std::string& uri) {
  auto where = Locate(uri);
  if (!where.ok()) return ReportError(where.status());
  io::FileSystem* fs = where->fs;
  auto shards = format::ResolveShards(fs, where->path);
  if (!shards.ok()) return ReportError(shards.status());

  FaultLog faults;
  std::vector<std::optional<uint64_t>> records;
  uint64_t total = 0;
  for (const auto& shard : *shards) {
    ShardScan scan = ScanRecords(fs, shard, &faults);
    records.push_back(scan.clean ? std::optional<uint64_t>(scan.record_crcs.size()) : std::nullopt);
    total += scan.record_crcs.size();
    if (!fs->Exists(format::ShardIndex::IndexPathFor(shard))) continue;
    if (scan.clean) {
      CheckIndex(fs, shard, scan, &faults);
    } else {  // its entries would repeat the faults above, or point into skipped ranges
      Warn("index of " + shard + " not checked: the shard itself is damaged");
    }
  }
  auto info = fs->Stat(where->path);
  if (info.ok() && info->is_directory &&
      fs->Exists(io::JoinPath(where->path, format::Manifest::kFileName))) {
    auto manifest = format::Manifest::Load(fs, where->path);  // ResolveShards parsed it already
    if (manifest.ok()) {
      CheckManifest(*manifest, where->path, records, fs, &faults);
      ReportLeftovers(fs, where->path, *manifest);
    }
  }
  fmt::print("verified {} shard(s), {} records: {}\n", shards->size(), total,
             faults.count() == 0 ? std::string("no faults")
                                 : std::to_string(faults.count()) + " fault(s)");
  return faults.count() == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void AddVerifyCommand(CLI::App* app, int* exit_code) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app->add_subcommand("verify", "Check every record CRC and index entry");
  cmd->footer(
      "Prints one 'file:offset: problem' line per fault and continues past it, so that all "
      "faults are listed. Exit code 0 when clean, 1 when any fault was found.");
  cmd->add_option("PATH", *path, "shard file, dataset directory or glob")->required();
  cmd->callback([path, exit_code] { *exit_code = RunVerify(*path); });
}

}  // namespace sluice::cli

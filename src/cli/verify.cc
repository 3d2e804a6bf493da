// `sluice verify PATH`: reads every record (checking both CRCs of each), then checks every
// index entry against the shard, and a manifest's (or a table version's) counts against the
// shards. Prints one
// "file:offset: problem" line per fault; exit 0 when clean, 1 otherwise. Shards are verified
// in parallel (one per thread, or split across threads when there are fewer shards than
// threads) and reported in shard order. A clean uncompressed local shard is proven clean by
// the fast path of verify_scan.h; any other shard, and any shard that path finds anything
// wrong with, is read by the RecordReader in skip mode, which names every fault.
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/ordered_parallel.h"
#include "cli/verify_scan.h"
#include "sluice/base/crc32c.h"
#include "sluice/base/thread_pool.h"
#include "sluice/format/dataset_publisher.h"
#include "sluice/format/manifest.h"
#include "sluice/format/record_reader.h"
#include "sluice/format/shard_index.h"
#include "sluice/table/table.h"

namespace sluice::cli {
namespace {

// Collects the fault lines of one shard (verified on a worker thread), printed later in
// shard order.
class FaultLog {
 public:
  void Add(const std::string& file, std::optional<uint64_t> offset, std::string problem) {
    // Library messages usually start with the file name already.
    if (problem.starts_with(file + ": ")) problem.erase(0, file.size() + 2);
    lines_.push_back(offset ? fmt::format("{}:{}: {}\n", file, *offset, problem)
                            : fmt::format("{}: {}\n", file, problem));
  }
  void AddWarning(std::string message) { warnings_.push_back(std::move(message)); }
  uint64_t count() const { return lines_.size(); }
  void Print() const {
    for (const auto& line : lines_) fmt::print("{}", line);
    for (const auto& w : warnings_) Warn(w);
  }

 private:
  std::vector<std::string> lines_;
  std::vector<std::string> warnings_;
};

// What the sequential pass saw of each record, to compare with what the index says. For
// uncompressed shards the record's place (offset, length) is enough: the pass checked the
// CRCs of exactly those bytes, so an index entry naming the same place names a good record
// and no second read is needed; the places are compared as digests (a table of them cost a
// page fault per 4 KiB, more than the CRCs), and listed only when the digests differ, to
// name the entries. Compressed shards are checked by reading through the index and
// comparing a CRC of each payload.
struct ShardScan {
  PlaceDigest places;             // every record's place (uncompressed shards)
  std::vector<uint64_t> offsets;  // record offsets in the file, when listed
  std::vector<uint64_t> lengths;  // payload lengths, when listed
  std::vector<uint32_t> crcs;     // payload CRC (compressed shards only)
  bool clean = true;
  uint64_t records() const { return places.count; }
};

// Reads the whole shard in skip mode, so that every damaged range is reported, not only
// the first.
// `expected_records`: what the index lists (0: unknown), to size the tables once;
// `list_places`: keep every record's place in offsets and lengths.
ShardScan ScanRecords(io::FileSystem* fs, const std::string& shard, uint64_t expected_records,
                      bool list_places, FaultLog* faults) {
  ShardScan scan;
  format::RecordReaderOptions options;
  options.policy = format::CorruptionPolicy::kSkip;
  auto reader = format::RecordReader::Open(fs, shard, options);
  if (!reader.ok()) {
    faults->Add(shard, std::nullopt, reader.status().message());
    scan.clean = false;
    return scan;
  }
  const bool compressed = (*reader)->codec() != format::Codec::kNone;
  if (list_places) {
    scan.offsets.reserve(expected_records);
    scan.lengths.reserve(expected_records);
  }
  if (compressed) scan.crcs.reserve(expected_records);
  ByteView record;
  Status error;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) {
      error = more.status();  // unrecoverable even when skipping (e.g. an I/O error)
      break;
    }
    if (!*more) break;
    scan.places.Add(scan.places.count, (*reader)->record_offset(), record.size());
    if (list_places) {
      scan.offsets.push_back((*reader)->record_offset());
      scan.lengths.push_back(record.size());
    }
    if (compressed) scan.crcs.push_back(crc32c::Value(record));
  }
  // Offsets are file offsets for uncompressed shards and for undecodable compressed data;
  // otherwise they count bytes of the decompressed record stream (docs/format.md, 5.).
  const bool stream_offsets = compressed;
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

// Opens the shard through its index; *places receives the digest of the places the index
// gives its records (file offset of the framed record, payload length), as Open's scan of
// the index file sees them.
Result<std::unique_ptr<format::ShardReader>> OpenIndexed(io::FileSystem* fs,
                                                         const std::string& shard,
                                                         PlaceDigest* places) {
  format::ShardReaderOptions options;
  options.build_missing_index = false;
  options.on_index_entry = [places](uint64_t i, const format::IndexRecord& record,
                                    const format::IndexFrame& frame) {
    places->Add(i, frame.file_offset + record.offset_in_frame, record.length);
  };
  return format::ShardReader::Open(fs, shard, options);
}

// The fast path for a clean uncompressed local shard (verify_scan.h): `pieces` ranges split
// at record boundaries the index gives, scanned on as many threads. True with scan->places
// set when the whole shard is proven clean; false otherwise (damage, a compressed or remote
// shard), and ScanRecords then reads it again to name what is wrong. A wrong boundary from a
// damaged index is found too: a piece that does not start at a record is not clean, and
// records numbered from a wrong count make the digests differ (CheckIndex then lists them).
bool ScanClean(io::FileSystem* fs, const std::string& shard,
               const Result<std::unique_ptr<format::ShardReader>>& index, size_t pieces,
               ShardScan* scan) {
  if (index.ok() && (*index)->codec() != format::Codec::kNone) return false;
  auto file = fs->OpenForRead(shard);
  // Local files only: remote stores are read in larger requests by the RecordReader.
  if (!file.ok() || !(*file)->MapsInPlace()) return false;
  const uint64_t size = (*file)->size();
  std::vector<uint64_t> starts{0}, numbers{0};
  for (size_t k = 1; index.ok() && k < pieces; ++k) {
    const uint64_t i = (*index)->num_records() * k / pieces;
    auto at = EntryOffset(**index, i);
    if (i == numbers.back() || !at || *at <= starts.back() || *at >= size) continue;
    starts.push_back(*at);
    numbers.push_back(i);
  }
  starts.push_back(size);
  std::vector<CleanRange> parts(numbers.size());
  auto scan_part = [&](size_t k) {
    parts[k] = ScanCleanRange(**file, starts[k], starts[k + 1], numbers[k],
                              format::kDefaultMaxRecordBytes);
  };
  std::vector<std::thread> helpers;
  for (size_t k = 1; k < parts.size(); ++k) helpers.emplace_back(scan_part, k);
  scan_part(0);
  for (auto& helper : helpers) helper.join();
  for (const auto& part : parts) {
    if (!part.clean) return false;
    scan->places.Merge(part.places);
  }
  return true;
}

// Compares every index entry with the sequential pass: for uncompressed shards by place (the
// digests, and entry by entry when they differ: `relist` scans the shard again listing its
// places), otherwise by reading each record through the index.
void CheckIndex(const std::string& shard,
                const Result<std::unique_ptr<format::ShardReader>>& reader, ShardScan scan,
                const PlaceDigest& index_places, const std::function<ShardScan()>& relist,
                FaultLog* faults) {
  std::string index_path = format::ShardIndex::IndexPathFor(shard);
  if (!reader.ok()) {
    faults->Add(index_path, std::nullopt, reader.status().message());
    return;
  }
  const format::ShardReader& index = **reader;
  if (index.num_records() != scan.records()) {
    faults->Add(index_path, std::nullopt,
                fmt::format("lists {} records but the shard holds {}", index.num_records(),
                            scan.records()));
  }
  const bool by_place = index.codec() == format::Codec::kNone;
  if (by_place) {
    if (index_places == scan.places) return;
    scan = relist();
  }
  std::string payload;
  for (uint64_t i = 0; i < index.num_records(); ++i) {
    if (by_place && i < scan.records()) {
      format::IndexRecord entry;
      format::IndexFrame frame;
      Status s = index.Locate(i, &entry, &frame);
      if (!s.ok()) {
        faults->Add(index_path, std::nullopt, fmt::format("index entry {}: {}", i, s.message()));
      } else if (frame.file_offset + entry.offset_in_frame != scan.offsets[i] ||
                 entry.length != scan.lengths[i]) {
        faults->Add(shard, frame.file_offset + entry.offset_in_frame,
                    fmt::format("index entry {} points at another record than record {}", i, i));
      }
      continue;
    }
    Status s = index.Read(i, &payload);
    if (!s.ok()) {
      faults->Add(shard, EntryOffset(index, i), fmt::format("index entry {}: {}", i, s.message()));
    } else if (i < scan.records() && (by_place || crc32c::Value(payload) != scan.crcs[i])) {
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

// What verifying a list of shards found: the faults (printed as found, in shard order), and
// each shard's record count (nullopt for a damaged shard, whose count is unknown).
struct ShardsVerified {
  std::vector<std::optional<uint64_t>> records;
  uint64_t total = 0;
  uint64_t faults = 0;
};

ShardsVerified VerifyShards(io::FileSystem* fs, const std::vector<std::string>& shards) {
  ShardsVerified out;
  struct ShardResult {
    FaultLog faults;
    uint64_t records = 0;
    bool clean = false;
  };
  // Fewer shards than threads: each shard is split across the idle threads.
  const size_t threads = ThreadPool::DefaultThreads();
  const size_t pieces = shards.size() < threads ? threads / std::max<size_t>(1, shards.size()) : 1;
  auto verify_shard = [fs, &shards, pieces](size_t i) {
    const std::string& shard = shards[i];
    ShardResult result;
    const bool indexed = fs->Exists(format::ShardIndex::IndexPathFor(shard));
    PlaceDigest index_places;
    auto reader = indexed ? OpenIndexed(fs, shard, &index_places) : NotFound("no index");
    // A record takes at least 16 bytes of the file: a damaged index cannot inflate the hint.
    const uint64_t hint =
        reader.ok() ? std::min((*reader)->num_records(), (*reader)->file_bytes() / 16) : 0;
    ShardScan scan;
    if (!ScanClean(fs, shard, reader, pieces, &scan)) {
      scan = ScanRecords(fs, shard, hint, /*list_places=*/false, &result.faults);
    }
    result.records = scan.records();
    result.clean = scan.clean;
    if (!indexed) return result;
    if (scan.clean) {
      auto relist = [&] {
        FaultLog again;  // the faults of the shard itself were reported by the first pass
        return ScanRecords(fs, shard, hint, /*list_places=*/true, &again);
      };
      CheckIndex(shard, reader, std::move(scan), index_places, relist, &result.faults);
    } else {  // its entries would repeat the faults above, or point into skipped ranges
      result.faults.AddWarning("index of " + shard + " not checked: the shard itself is damaged");
    }
    return result;
  };
  OrderedParallelMap<ShardResult>(
      shards.size(), threads, 2 * threads, verify_shard, [&](size_t, ShardResult&& r) {
        r.faults.Print();
        out.faults += r.faults.count();
        out.records.push_back(r.clean ? std::optional<uint64_t>(r.records) : std::nullopt);
        out.total += r.records;
        return true;
      });
  return out;
}

std::string FaultSummary(uint64_t faults) {
  return faults == 0 ? std::string("no faults") : std::to_string(faults) + " fault(s)";
}

// A table version's counts and sizes in its log must match its files. `records` as in
// CheckManifest, for `files` in order.
void CheckTableFiles(const table::Table& t, const std::vector<table::DataFile>& files,
                     const std::vector<std::string>& paths,
                     const std::vector<std::optional<uint64_t>>& records, FaultLog* faults) {
  const std::string version = "version " + std::to_string(t.version());
  for (size_t i = 0; i < files.size() && i < records.size(); ++i) {
    const table::DataFile& f = files[i];
    if (records[i] && f.records >= 0 && static_cast<uint64_t>(f.records) != *records[i]) {
      faults->Add(paths[i], std::nullopt,
                  fmt::format("{} of the table says {} records, the shard holds {}", version,
                              f.records, *records[i]));
    }
    auto info = t.fs()->Stat(paths[i]);
    if (info.ok() && info->size != static_cast<uint64_t>(f.size)) {
      faults->Add(paths[i], std::nullopt,
                  fmt::format("{} of the table says {} bytes, the file has {}", version, f.size,
                              info->size));
    }
    auto index = f.tags.find("sluice.index");
    if (index != f.tags.end() && !t.fs()->Exists(format::ShardIndex::IndexPathFor(paths[i]))) {
      faults->Add(format::ShardIndex::IndexPathFor(paths[i]), std::nullopt,
                  version + " of the table lists this index; it is missing");
    }
  }
}

// A table: every data file (and index) of one version, checked as shards, then against what
// the log says of them. Files of other versions are not leftovers: `sluice table vacuum`
// decides what no version needs.
int RunVerifyTable(const Location& where, std::optional<int64_t> version) {
  table::OpenOptions open;
  open.version = version;
  auto t = table::Table::Open(where.fs, where.path, open);
  if (!t.ok()) return ReportError(t.status());
  FaultLog path_faults;
  std::vector<table::DataFile> files;
  std::vector<std::string> paths;
  for (const table::DataFile& f : t->files()) {
    auto path = t->FilePath(f);
    if (!path.ok()) {  // named by version and commit; never opened
      path_faults.Add(f.path, std::nullopt, path.status().message());
      continue;
    }
    files.push_back(f);
    paths.push_back(std::move(*path));
  }
  path_faults.Print();
  ShardsVerified verified = VerifyShards(where.fs, paths);
  FaultLog faults;
  CheckTableFiles(*t, files, paths, verified.records, &faults);
  faults.Print();
  const uint64_t fault_count = path_faults.count() + verified.faults + faults.count();
  fmt::print("verified table {} version {}: {} shard(s), {} records: {}\n", t->root(), t->version(),
             paths.size(), verified.total, FaultSummary(fault_count));
  return fault_count == 0 ? kExitOk : kExitFailure;
}

int RunVerifyDataset(const Location& where) {
  io::FileSystem* fs = where.fs;
  auto shards = format::ResolveShards(fs, where.path);
  if (!shards.ok()) return ReportError(shards.status());
  ShardsVerified verified = VerifyShards(fs, *shards);
  uint64_t fault_count = verified.faults;
  auto info = fs->Stat(where.path);
  if (info.ok() && info->is_directory &&
      fs->Exists(io::JoinPath(where.path, format::Manifest::kFileName))) {
    auto manifest = format::Manifest::Load(fs, where.path);  // ResolveShards parsed it already
    FaultLog faults;
    if (manifest.ok()) {
      CheckManifest(*manifest, where.path, verified.records, fs, &faults);
      ReportLeftovers(fs, where.path, *manifest);
    }
    faults.Print();
    fault_count += faults.count();
  }
  fmt::print("verified {} shard(s), {} records: {}\n", shards->size(), verified.total,
             FaultSummary(fault_count));
  return fault_count == 0 ? kExitOk : kExitFailure;
}

int RunVerify(const std::string& uri, std::optional<int64_t> version) {
  auto where = Locate(uri);
  if (!where.ok()) return ReportError(where.status());
  if (table::Table::IsTable(where->fs, where->path)) return RunVerifyTable(*where, version);
  if (version.has_value()) {
    return ReportError(InvalidArgument(uri + " is not a table (it has no _delta_log " +
                                       "directory): --version applies to tables only"));
  }
  return RunVerifyDataset(*where);
}

}  // namespace

void AddVerifyCommand(CLI::App* cmd, int* exit_code) {
  auto path = std::make_shared<std::string>();
  cmd->footer(
      "Prints one 'file:offset: problem' line per fault and continues past it, so that all "
      "faults are listed. Exit code 0 when clean, 1 when any fault was found.");
  auto version = std::make_shared<std::optional<int64_t>>();
  cmd->add_option("PATH", *path, "shard file, dataset directory, table or glob")->required();
  cmd->add_option("--version", *version, "table: the version to verify (Default: the latest)");
  cmd->callback([path, version, exit_code] { *exit_code = RunVerify(*path, *version); });
}

}  // namespace sluice::cli

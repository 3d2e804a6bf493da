// `sluice inspect PATH`: what a dataset holds (shards, codecs, counts, schema), or with
// --json its first records as JSON lines.
#include <fmt/core.h>

#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/table_summary.h"
#include "sluice/base/bytes.h"
#include "sluice/format/example_json.h"
#include "sluice/format/manifest.h"
#include "sluice/format/record_reader.h"
#include "sluice/format/shard_index.h"
#include "sluice/table/table.h"

namespace sluice::cli {
namespace {

struct InspectOptions {
  std::string path;
  uint64_t records = 10;  // Default: 10 records printed (--json) or sampled for the schema
  bool json = false;
};

struct ShardFacts {
  std::string path;
  format::Codec codec = format::Codec::kNone;
  uint64_t records = 0;
  uint64_t file_bytes = 0;
  bool indexed = false;
};

// The dataset behind PATH: its shards in order and, for a directory, its manifest; for a
// table (docs/table.md), one version's files.
struct Dataset {
  Location where;
  format::ResolvedDataset resolved;
  std::optional<table::Table> table;
  const std::vector<std::string>& shards() const { return resolved.shards; }
  const std::optional<format::Manifest>& manifest() const { return resolved.manifest; }
};

Result<Dataset> OpenDataset(const std::string& uri) {
  Dataset d;
  SLUICE_ASSIGN_OR_RETURN(d.where, Locate(uri));
  SLUICE_ASSIGN_OR_RETURN(auto selection, table::ResolveTableRead(d.where.fs, d.where.path));
  if (selection.has_value()) {
    table::OpenOptions version;
    version.version = selection->version;
    SLUICE_ASSIGN_OR_RETURN(d.table, table::Table::Open(d.where.fs, selection->root, version));
    d.resolved.shards = selection->files;
    return d;
  }
  SLUICE_ASSIGN_OR_RETURN(d.resolved, format::ResolveDataset(d.where.fs, d.where.path));
  return d;
}

Result<uint64_t> CountByReading(io::FileSystem* fs, const std::string& shard) {
  SLUICE_ASSIGN_OR_RETURN(auto reader, format::RecordReader::Open(fs, shard));
  uint64_t n = 0;
  ByteView record;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) return n;
    ++n;
  }
}

// Shard i's facts, checked against the manifest where that is cheap (size, and the count
// its index gives): counts come from the manifest, else the index, else a full read.
Result<ShardFacts> DescribeShard(const Dataset& d, size_t i) {
  io::FileSystem* fs = d.where.fs;
  ShardFacts facts;
  facts.path = d.shards()[i];
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(facts.path));
  facts.file_bytes = file->size();
  char scratch[4];
  SLUICE_ASSIGN_OR_RETURN(ByteView head, file->Read(0, sizeof scratch, scratch));
  facts.codec = format::DetectCodec(head);
  SLUICE_RETURN_IF_ERROR(
      format::CheckShardMatchesManifest(d.resolved, i, facts.file_bytes, std::nullopt));
  facts.indexed = fs->Exists(format::ShardIndex::IndexPathFor(facts.path));
  std::optional<uint64_t> indexed_records;
  if (facts.indexed) {
    format::ShardReaderOptions options;
    options.build_missing_index = false;
    SLUICE_ASSIGN_OR_RETURN(auto reader, format::ShardReader::Open(fs, facts.path, options));
    indexed_records = reader->num_records();
    SLUICE_RETURN_IF_ERROR(
        format::CheckShardMatchesManifest(d.resolved, i, facts.file_bytes, indexed_records));
  }
  if (d.manifest()) {
    facts.records = d.manifest()->shards[i].records;
  } else if (indexed_records) {
    facts.records = *indexed_records;
  } else {
    SLUICE_ASSIGN_OR_RETURN(facts.records, CountByReading(fs, facts.path));
  }
  return facts;
}

// Calls fn(example) for the first `limit` records of the dataset, in order. A record that
// is not a tf.train.Example stops the walk with InvalidArgument naming shard and record;
// read errors (DataLoss, ...) are returned as they are.
Status ForFirstExamples(const Dataset& d, uint64_t limit,
                        const std::function<void(const format::ExampleView&)>& fn) {
  format::ExampleView example;
  uint64_t seen = 0;
  for (const auto& shard : d.shards()) {
    SLUICE_ASSIGN_OR_RETURN(auto reader, format::RecordReader::Open(d.where.fs, shard));
    ByteView record;
    while (seen < limit) {
      SLUICE_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
      if (!more) break;
      Status s = example.Parse(record);
      if (!s.ok()) {
        return InvalidArgument(shard + ": record " + std::to_string(reader->record_index()) +
                               " is not a tf.train.Example (" + s.message() + ")");
      }
      fn(example);
      ++seen;
    }
    if (seen >= limit) break;
  }
  return Status::OK();
}

void PrintSchema(const std::map<std::string, format::FeatureSchema>& features,
                 const std::string& origin) {
  fmt::print("features ({}):\n", origin);
  if (features.empty()) fmt::print("  (none)\n");
  size_t width = 8;
  for (const auto& [name, f] : features) width = std::max(width, name.size());
  for (const auto& [name, f] : features) {
    std::string count =
        f.values_per_record < 0 ? "varies" : std::to_string(f.values_per_record) + " per record";
    fmt::print("  {:<{}}  {:<5}  {}\n", name, width, format::FeatureTypeName(f.type), count);
  }
}

int PrintOverview(const Dataset& d, const InspectOptions& opts) {
  std::vector<ShardFacts> shards;
  uint64_t records = 0, bytes = 0;
  for (size_t i = 0; i < d.shards().size(); ++i) {
    auto facts = DescribeShard(d, i);
    if (!facts.ok()) return ReportError(facts.status());
    records += facts->records;
    bytes += facts->file_bytes;
    shards.push_back(std::move(*facts));
  }
  fmt::print("{}: {} shard(s), {} records, {}\n", opts.path, shards.size(), records,
             FormatByteSize(bytes));
  if (d.table) PrintTableSummary(*d.table);
  size_t width = 5;
  for (const auto& s : shards) width = std::max(width, s.path.size());
  fmt::print("  {:<{}}  {:<5}  {:>10}  {:>12}  {}\n", "shard", width, "codec", "records", "bytes",
             "index");
  for (const auto& s : shards) {
    fmt::print("  {:<{}}  {:<5}  {:>10}  {:>12}  {}\n", s.path, width, format::CodecName(s.codec),
               s.records, s.file_bytes, s.indexed ? "yes" : "no");
  }
  if (d.table && !d.table->features().empty()) {
    PrintSchema(d.table->features(), "from the table's metaData");
  } else if (d.manifest() && !d.manifest()->features.empty()) {
    PrintSchema(d.manifest()->features, "from dataset.json");
  } else {
    format::SchemaInference inference;
    Status s = ForFirstExamples(d, opts.records, [&](const format::ExampleView& example) {
      (void)inference.Add(example);  // a type clash keeps the first type; fine for a summary
    });
    if (s.code() == StatusCode::kInvalidArgument) {  // foreign records: no schema to show
      fmt::print("features: none (records are not tf.train.Example: {})\n", s.message());
    } else if (!s.ok()) {
      return ReportError(s);
    } else {
      PrintSchema(inference.schema(),
                  "inferred from the first " + std::to_string(inference.records()) + " records");
    }
  }
  if (d.manifest() && !d.manifest()->metadata.empty()) {
    fmt::print("metadata:\n");
    for (const auto& [key, value] : d.manifest()->metadata) fmt::print("  {}: {}\n", key, value);
  }
  return kExitOk;
}

int RunInspect(const InspectOptions& opts) {
  auto dataset = OpenDataset(opts.path);
  if (!dataset.ok()) return ReportError(dataset.status());
  if (!opts.json) return PrintOverview(*dataset, opts);
  Status s = ForFirstExamples(*dataset, opts.records, [](const format::ExampleView& example) {
    fmt::print("{}\n", format::ExampleToJson(example));
  });
  return s.ok() ? kExitOk : ReportError(s);
}

}  // namespace

void AddInspectCommand(CLI::App* cmd, int* exit_code) {
  auto opts = std::make_shared<InspectOptions>();
  cmd->footer(
      "PATH is a shard file, a directory with dataset.json (or with *.tfrecord* files), a "
      "glob, or a table (its directory, or DIR@vN for version N). --json prints the first records "
      "as JSON lines instead (bytes in base64).");
  cmd->add_option("PATH", opts->path, "shard file, dataset directory or glob")->required();
  cmd->add_option("--records,-n", opts->records,
                  "records to print with --json, or to infer the schema from")
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "print records as JSON lines");
  cmd->callback([opts, exit_code] { *exit_code = RunInspect(*opts); });
}

}  // namespace sluice::cli

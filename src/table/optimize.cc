// optimize: compacts the small shards of each partition into shards of about the target
// size, in one commit whose removes and adds have dataChange = false (the data is
// rearranged, not changed: streaming readers of the log skip it, Delta's rule). Records keep
// their order: the inputs are concatenated in path order.
#include <map>

#include "file_actions.h"
#include "log_reader.h"
#include "sluice/format/shard_index.h"
#include "sluice/table/table_writer.h"
#include "sluice/table/timestamp.h"
#include "table_internal.h"

namespace sluice::table {
namespace {

// Groups of small files to merge: per partition, in path order, each group up to `target`
// bytes; a group of one file would gain nothing and is left out.
std::vector<std::vector<AddFile>> PlanBins(const TableState& state, const FilePredicate& where,
                                           uint64_t target) {
  std::map<PartitionValues, std::vector<AddFile>> small;
  for (const auto& [_, add] : state.files) {
    if (static_cast<uint64_t>(add.size) < target && where.Matches(add.partition_values)) {
      small[add.partition_values].push_back(add);
    }
  }
  std::vector<std::vector<AddFile>> bins;
  for (auto& [_, files] : small) {
    std::vector<AddFile> bin;
    uint64_t bytes = 0;
    for (AddFile& f : files) {
      if (!bin.empty() && bytes + static_cast<uint64_t>(f.size) > target) {
        if (bin.size() > 1) bins.push_back(std::move(bin));
        bin.clear();
        bytes = 0;
      }
      bytes += static_cast<uint64_t>(f.size);
      bin.push_back(std::move(f));
    }
    if (bin.size() > 1) bins.push_back(std::move(bin));
  }
  return bins;
}

// Copies the records of the files at `paths` (absolute, checked by Table::FilePath) into
// `writer`; returns how many.
Result<int64_t> CopyRecords(io::FileSystem* fs, const std::vector<std::string>& paths,
                            TableWriter* writer) {
  int64_t records = 0;
  std::string record;
  for (const std::string& path : paths) {
    SLUICE_ASSIGN_OR_RETURN(auto reader, format::ShardReader::Open(fs, path));
    for (uint64_t i = 0; i < reader->num_records(); ++i) {
      SLUICE_RETURN_IF_ERROR(reader->Read(i, &record));
      SLUICE_RETURN_IF_ERROR(writer->Write(record));
      ++records;
    }
  }
  return records;
}

Result<format::Codec> CodecOf(io::FileSystem* fs, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto reader, format::ShardReader::Open(fs, path));
  return reader->codec();
}

}  // namespace

Result<OptimizeResult> Table::Optimize(const OptimizeOptions& options) {
  if (options.target_file_bytes == 0) return InvalidArgument("optimize: target_file_bytes is 0");
  SLUICE_RETURN_IF_ERROR(Refresh());
  SLUICE_RETURN_IF_ERROR(options.where.Validate(state_->metadata->partition_columns));
  OptimizeResult result;
  std::vector<std::vector<AddFile>> bins =
      PlanBins(*state_, options.where, options.target_file_bytes);
  if (bins.empty()) return result;
  std::vector<std::unique_ptr<TableWriter>> writers;
  std::vector<DataFile> outputs;
  for (const std::vector<AddFile>& bin : bins) {
    std::vector<std::string> inputs;
    for (const AddFile& add : bin) {
      SLUICE_ASSIGN_OR_RETURN(std::string input, FilePath(ToDataFile(add)));
      inputs.push_back(std::move(input));
    }
    TableWriterOptions wo;
    SLUICE_ASSIGN_OR_RETURN(wo.record.codec, CodecOf(fs_, inputs[0]));
    wo.target_file_bytes = options.target_file_bytes;
    wo.partition_values = bin[0].partition_values;
    SLUICE_ASSIGN_OR_RETURN(auto writer, TableWriter::Open(fs_, root_, wo));
    SLUICE_ASSIGN_OR_RETURN(int64_t records, CopyRecords(fs_, inputs, writer.get()));
    SLUICE_ASSIGN_OR_RETURN(std::vector<DataFile> files, writer->Finish());
    result.records += records;
    outputs.insert(outputs.end(), files.begin(), files.end());
    writers.push_back(std::move(writer));
  }
  auto plan = [&](const TableState& state, Transaction* txn) -> Status {
    const int64_t now = options.commit.clock ? options.commit.clock() : NowMs();
    for (const std::vector<AddFile>& bin : bins) {
      for (const AddFile& add : bin) {
        if (!state.files.count(add.path)) {
          return FailedPrecondition("optimize " + root_ + ": " + add.path +
                                    " was removed by a concurrent commit; nothing was committed");
        }
        txn->actions.push_back(ToRemove(add, /*data_change=*/false));
        txn->read_files.insert(add.path);
      }
    }
    for (const DataFile& f : outputs) {
      AddFile a = ToAdd(f, now);
      a.data_change = false;
      txn->actions.push_back(std::move(a));
    }
    txn->info.operation = "OPTIMIZE";
    txn->info.operation_parameters["predicate"] = JsonStringList({options.where.ToString()});
    txn->info.operation_parameters["zOrderBy"] = "[]";
    txn->info.operation_metrics["numRemovedFiles"] = std::to_string(txn->read_files.size());
    txn->info.operation_metrics["numAddedFiles"] = std::to_string(outputs.size());
    txn->info.is_blind_append = false;
    return Status::OK();
  };
  Result<CommitResult> commit = CommitPlanned(options.commit, plan);
  if (!commit.ok()) {
    for (auto& w : writers) w->Abort();  // the new shards were never referenced
    return commit.status();
  }
  result.commit = *commit;
  for (const auto& bin : bins) {
    for (const AddFile& add : bin) result.removed.push_back(add.path);
  }
  for (const DataFile& f : outputs) result.added.push_back(f.path);
  return result;
}

}  // namespace sluice::table

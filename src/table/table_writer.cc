#include "sluice/table/table_writer.h"

#include <cstdio>

#include "file_actions.h"
#include "sluice/format/shard_index.h"
#include "uuid.h"

namespace sluice::table {
namespace {

std::vector<std::string> Columns(const PartitionValues& values) {
  std::vector<std::string> out;
  for (const auto& [column, _] : values) out.push_back(column);
  return out;
}

}  // namespace

TableWriter::TableWriter(io::FileSystem* fs, std::string root, TableWriterOptions options)
    : fs_(fs),
      root_(std::move(root)),
      options_(std::move(options)),
      dir_(PartitionDirectory(options_.partition_values, Columns(options_.partition_values))),
      name_(options_.prefix + "-" + NewUuid()) {}

Result<std::unique_ptr<TableWriter>> TableWriter::Open(io::FileSystem* fs, const std::string& root,
                                                       const TableWriterOptions& options) {
  if (options.prefix.empty() || options.prefix.find('/') != std::string::npos ||
      options.prefix[0] == '_' || options.prefix[0] == '.') {
    return InvalidArgument("table writer prefix '" + options.prefix +
                           "' must be a visible file name (no '/', no leading '_' or '.')");
  }
  if (options.target_file_bytes == 0) return InvalidArgument("target_file_bytes must be > 0");
  std::unique_ptr<TableWriter> w(new TableWriter(fs, root, options));
  SLUICE_RETURN_IF_ERROR(fs->CreateDirs(io::JoinPath(root, w->dir_)));
  return w;
}

TableWriter::~TableWriter() {
  if (!handed_over_) Abort();
}

Status TableWriter::StartFile() {
  char seq[16];
  std::snprintf(seq, sizeof seq, "%05zu", written_.size());
  std::string file =
      name_ + "-" + seq + ".tfrecord" + std::string(format::CodecExtension(options_.record.codec));
  std::string relative = dir_.empty() ? file : dir_ + "/" + file;
  SLUICE_ASSIGN_OR_RETURN(
      current_, format::RecordWriter::Open(fs_, io::JoinPath(root_, relative), options_.record));
  written_.push_back(relative);
  return Status::OK();
}

Status TableWriter::FinishFile() {
  std::unique_ptr<format::RecordWriter> w = std::move(current_);
  const uint64_t records = w->records_written();
  SLUICE_RETURN_IF_ERROR(w->Close());
  const std::string& relative = written_.back();
  const std::string full = io::JoinPath(root_, relative);
  SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, fs_->Stat(full));
  DataFile f;
  f.path = EncodeLogPath(relative);
  f.size = static_cast<int64_t>(info.size);
  f.records = static_cast<int64_t>(records);
  f.partition_values = options_.partition_values;
  f.modification_time_ms = info.modification_time_ms;
  if (options_.record.write_index) {
    f.tags[std::string(kIndexTag)] = EncodeLogPath(format::ShardIndex::IndexPathFor(relative));
  }
  files_.push_back(std::move(f));
  return Status::OK();
}

Status TableWriter::Write(ByteView record) {
  if (!status_.ok()) return status_;
  if (handed_over_) return status_ = FailedPrecondition("TableWriter: Write after Finish");
  if (current_ == nullptr) status_ = StartFile();
  if (status_.ok()) status_ = current_->Write(record);
  if (!status_.ok()) return status_;
  ++records_;
  if (current_->file_bytes() >= options_.target_file_bytes) status_ = FinishFile();
  return status_;
}

Result<std::vector<DataFile>> TableWriter::Finish() {
  if (status_.ok() && handed_over_) status_ = FailedPrecondition("TableWriter: Finish twice");
  if (status_.ok() && current_ != nullptr) status_ = FinishFile();
  if (!status_.ok()) {
    Abort();
    return status_;
  }
  handed_over_ = true;
  return files_;
}

void TableWriter::Abort() {
  current_.reset();  // an unclosed RecordWriter removes its temporary
  for (const std::string& relative : written_) {
    const std::string full = io::JoinPath(root_, relative);
    (void)fs_->Delete(full);
    (void)fs_->Delete(format::ShardIndex::IndexPathFor(full));
  }
  written_.clear();
  files_.clear();
  handed_over_ = true;
}

}  // namespace sluice::table

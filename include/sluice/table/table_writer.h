// TableWriter: writes records as shards under a table's root, with names no other writer
// uses ("<partition dir>/part-<uuid>-00000.tfrecord.zst" + ".idx"), and hands them over as
// DataFiles for one commit (Table::Append / AppendFiles / Overwrite). Nothing is visible to
// readers until that commit; files of a writer that never commits (a crash, a lost conflict)
// are unreferenced and vacuum reclaims them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/format/record_writer.h"
#include "sluice/table/table.h"

namespace sluice::table {

struct TableWriterOptions {
  format::RecordWriterOptions record;  // Default: zstd, with an index per shard
  // A shard is closed once its file reaches this size (it may exceed it by one zstd frame).
  uint64_t target_file_bytes = 100'000'000;  // Default: 100 MB
  PartitionValues partition_values;          // Default: none (an unpartitioned table)
  std::string prefix = "part";               // Default: "part"
};

// Sticky failure: the first error wins. Threading: not thread-safe.
class TableWriter {
 public:
  static Result<std::unique_ptr<TableWriter>> Open(io::FileSystem* fs, const std::string& root,
                                                   const TableWriterOptions& options = {});
  // Deletes the files written unless Finish() handed them over.
  ~TableWriter();

  Status Write(ByteView record);
  // Closes the last shard; returns every shard written (none when no record was written).
  // On error every file is deleted.
  Result<std::vector<DataFile>> Finish();
  // Deletes every file written (also after Finish: for a commit that failed).
  void Abort();

  uint64_t records_written() const { return records_; }

 private:
  TableWriter(io::FileSystem* fs, std::string root, TableWriterOptions options);
  Status StartFile();
  Status FinishFile();

  io::FileSystem* const fs_;
  const std::string root_;
  const TableWriterOptions options_;
  const std::string dir_;   // partition directory relative to the root ("" when none)
  const std::string name_;  // "part-<uuid>"
  std::unique_ptr<format::RecordWriter> current_;
  std::vector<DataFile> files_;
  std::vector<std::string> written_;  // relative paths of closed shards (for Abort)
  uint64_t records_ = 0;
  Status status_;
  bool handed_over_ = false;
};

}  // namespace sluice::table

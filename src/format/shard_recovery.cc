// RecoverShard: the intact records of a damaged shard, rewritten under its name.
#include "sluice/format/shard_recovery.h"

#include "sluice/format/record_reader.h"
#include "sluice/format/record_writer.h"
#include "sluice/format/shard_index.h"

namespace sluice::format {
namespace {

// Moves the damaged shard (and its index) aside and the recovered one into its place.
Status SwapIn(io::FileSystem* fs, const std::string& path, const std::string& recovered) {
  const std::string index = ShardIndex::IndexPathFor(path);
  SLUICE_RETURN_IF_ERROR(fs->Rename(path, path + ".damaged"));
  if (fs->Stat(index).ok()) SLUICE_RETURN_IF_ERROR(fs->Rename(index, index + ".damaged"));
  SLUICE_RETURN_IF_ERROR(fs->Rename(recovered, path));
  return fs->Rename(ShardIndex::IndexPathFor(recovered), index);
}

}  // namespace

Result<ShardRecoveryReport> RecoverShard(io::FileSystem* fs, const std::string& path) {
  const std::string damaged = path + ".damaged";
  if (fs->Stat(damaged).ok()) {
    return AlreadyExists(damaged + " exists (an earlier recovery?): move it away first");
  }
  RecordReaderOptions read;
  read.policy = CorruptionPolicy::kSkip;
  SLUICE_ASSIGN_OR_RETURN(auto reader, RecordReader::Open(fs, path, read));
  ShardRecoveryReport report;
  report.codec = reader->codec();
  RecordWriterOptions write;
  write.codec = report.codec;
  const std::string recovered = path + ".recovered";
  SLUICE_ASSIGN_OR_RETURN(auto writer, RecordWriter::Open(fs, recovered, write));
  ByteView record;
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    SLUICE_RETURN_IF_ERROR(writer->Write(record));
    ++report.records;
  }
  report.lost = reader->skipped();
  if (report.lost.empty()) {  // intact: keep the file, (re)write its index
    writer.reset();           // an unclosed writer leaves no file
    SLUICE_ASSIGN_OR_RETURN(ShardIndex index, ShardIndex::Build(fs, path));
    SLUICE_RETURN_IF_ERROR(index.Save(fs, ShardIndex::IndexPathFor(path)));
    return report;
  }
  SLUICE_RETURN_IF_ERROR(writer->Close());
  SLUICE_RETURN_IF_ERROR(SwapIn(fs, path, recovered));
  report.damaged_path = damaged;
  return report;
}

}  // namespace sluice::format

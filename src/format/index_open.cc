// OpenShardIndex: the index file checked against its shard, or an index built in memory.
#include "format/index_open.h"

#include <algorithm>

#include "format/framing.h"

namespace sluice::format {
namespace {

// For uncompressed shards: the first and last records the index lists must start with a
// valid header of the length it gives. Two 12-byte reads that catch an index of another
// shard, or of an earlier version of this one, even when the sizes agree. The checks of this
// file read uncached: through the node-local cache, 12 bytes would fetch a block of the
// shard before the order's plan names its chunks, then the chunks again.
Status CheckEndRecords(const io::RandomAccessFile& shard, const IndexLookup& index,
                       const std::string& index_path, ByteView head) {
  if (index.codec() != Codec::kNone || index.num_records() == 0) return Status::OK();
  for (uint64_t i : {uint64_t{0}, index.num_records() - 1}) {
    IndexRecord r;
    IndexFrame f;
    SLUICE_RETURN_IF_ERROR(index.Locate(i, &r, &f));
    char header[kRecordHeaderBytes];
    const uint64_t at = f.file_offset + r.offset_in_frame;
    ByteView got = head.substr(0, sizeof header);  // the first record starts the shard
    if (at != 0 || got.size() != sizeof header) {
      SLUICE_ASSIGN_OR_RETURN(got, shard.ReadUncached(at, sizeof header, header));
    }
    uint64_t length = 0;
    if (got.size() != sizeof header ||
        CheckRecordHeader(got.data(), UINT64_MAX, true, &length) != HeaderCheck::kOk ||
        length != r.length) {
      return DataLoss(index_path + ": index does not match shard " + shard.path() + ": record " +
                      std::to_string(i) + " at offset " + std::to_string(at) +
                      " does not match the index (a damaged record header, or an index of "
                      "another shard or of an earlier version of this one)");
    }
  }
  return Status::OK();
}

// The index must name the shard's codec and end where the shard ends.
Status CheckMatchesShard(const io::RandomAccessFile& shard, const IndexLookup& index,
                         const std::string& index_path) {
  auto mismatch = [&](const std::string& why) {
    return DataLoss(index_path + ": index does not match shard " + shard.path() + ": " + why);
  };
  char magic[kDetectBytes];
  SLUICE_ASSIGN_OR_RETURN(ByteView head, shard.ReadUncached(0, sizeof magic, magic));
  Codec codec = DetectShardCodec(head, shard.path());
  if (codec != index.codec()) {
    return mismatch("index says codec " + std::string(CodecName(index.codec())) +
                    ", the shard is " + std::string(CodecName(codec)));
  }
  if (index.end_offset() != shard.size()) {
    return mismatch("index covers " + std::to_string(index.end_offset()) +
                    " bytes, the shard has " + std::to_string(shard.size()));
  }
  return CheckEndRecords(shard, index, index_path, head);
}

}  // namespace

RecordReaderOptions SequentialReadOptions(const ShardReaderOptions& options) {
  RecordReaderOptions o;
  o.max_record_bytes = options.max_record_bytes;
  o.map_uncompressed = options.map_uncompressed;
  return o;
}

OpenedIndex OpenShardIndex(io::FileSystem* fs, const io::RandomAccessFile& shard,
                           const ShardReaderOptions& options) {
  const std::string index_path = ShardIndex::IndexPathFor(shard.path());
  OpenedIndex out;
  auto index =
      OpenIndexDirectory(fs, index_path, options.index_cache, options.index_directory_bytes,
                         std::max<uint64_t>(1, options.chunk_bytes), options.on_index_entry);
  if (index.ok()) {
    out.index = std::move(*index);
    out.problem = CheckMatchesShard(shard, *out.index, index_path);
    return out;
  }
  if (index.status().code() != StatusCode::kNotFound || !options.build_missing_index) {
    out.problem = index.status();
    return out;
  }
  auto built = ShardIndex::Build(fs, shard.path(), SequentialReadOptions(options));
  if (built.ok()) {
    out.index = NewInMemoryIndexLookup(std::move(*built), std::max<uint64_t>(1, options.chunk_bytes));
  } else {
    out.problem = built.status();
  }
  return out;
}

std::string ShardDamage::Describe(uint64_t records_recovered) const {
  std::string s = problem.message() + "; read " + std::to_string(records_recovered) +
                  " intact record(s) from the shard";
  if (records_lost > 0)
    s += "; lost " + std::to_string(records_lost) + " record(s) its index listed";
  uint64_t bytes = 0;
  for (const SkippedRange& r : lost) bytes += r.length;
  if (!lost.empty()) {
    s += "; " + std::to_string(lost.size()) + " damaged range(s) of " + std::to_string(bytes) +
         " byte(s), the first at " + (lost[0].in_compressed_file ? "file offset " : "offset ") +
         std::to_string(lost[0].offset);
  }
  return s;
}

}  // namespace sluice::format

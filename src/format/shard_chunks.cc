// The chunk table of a shard (sluice/format/shard_chunks.h) and the decoding of a fetched
// chunk (chunk_decode.h).
#include "sluice/format/shard_chunks.h"

#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_forceIgnoreChecksum (zstd >= 1.4.7)
#include <zstd.h>

#include <climits>

#include "format/chunk_decode.h"

namespace sluice::format {

void ChunkTableBuilder::StartChunk(uint64_t i, uint64_t frame_index, const IndexFrame& frame) {
  chunks_.push_back(ShardChunk{i, 1, frame.file_offset, frame.file_bytes, frame.uncompressed_bytes,
                               static_cast<uint32_t>(frame_index), 1});
  last_frame_ = frame_index;
}

std::vector<ShardChunk> ChunkTableOf(const ShardIndex& index, uint64_t target_bytes) {
  ChunkTableBuilder builder(target_bytes);
  const auto& records = index.records();
  for (uint64_t i = 0; i < records.size(); ++i) {
    builder.AddRecord(i, records[i].frame, index.frames()[records[i].frame]);
  }
  return builder.Finish();
}

namespace {

Status DecodeZstd(ByteView in, char* out, uint64_t size, bool frame_checksum,
                  const std::string& where) {
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                                       ZSTD_freeDCtx);
  if (!dctx) return ResourceExhausted("ZSTD_createDCtx failed");
  // The frame's XXH64 is ~14% of a decode (1 MiB of small records: 73 vs 62 us); a reader
  // that checks every record's CRCs skips it. Set on every call: the context is the thread's.
  if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_forceIgnoreChecksum,
                                          frame_checksum ? ZSTD_d_validateChecksum
                                                         : ZSTD_d_ignoreChecksum))) {
    return Internal("zstd: cannot set ZSTD_d_forceIgnoreChecksum");
  }
  // One call decodes every zstd frame of the range (an index frame may group several).
  size_t rc = ZSTD_decompressDCtx(dctx.get(), out, size, in.data(), in.size());
  if (ZSTD_isError(rc)) {
    return DataLoss(where + ": corrupt zstd frame: " + ZSTD_getErrorName(rc));
  }
  if (rc != size) {
    return DataLoss(where + " decodes to " + std::to_string(rc) + " bytes, not the index's " +
                    std::to_string(size));
  }
  return Status::OK();
}

// Inflates a gzip stream (possibly several members) that must decode to exactly `size`.
Status DecodeGzip(ByteView in, char* out, uint64_t size, const std::string& where) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return Internal("inflateInit2 failed");
  uint64_t produced = 0;
  int rc = Z_OK;
  while (!in.empty()) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT_MAX));
    z.next_out = reinterpret_cast<Bytef*>(out + produced);
    z.avail_out = static_cast<uInt>(std::min<uint64_t>(size - produced, UINT_MAX));
    rc = inflate(&z, Z_NO_FLUSH);
    in.remove_prefix(reinterpret_cast<const char*>(z.next_in) - in.data());
    produced = reinterpret_cast<char*>(z.next_out) - out;
    if (rc == Z_STREAM_END) {
      inflateReset(&z);  // another member may follow
    } else if (rc != Z_OK) {
      break;  // Z_BUF_ERROR: no progress possible (output full or input cut); else corrupt
    }
  }
  const char* msg = z.msg;
  inflateEnd(&z);
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
    return DataLoss(where + ": corrupt gzip stream: " + (msg ? msg : "inflate error"));
  }
  if (produced != size || !in.empty() || rc != Z_STREAM_END) {
    return DataLoss(where + " decodes to " + (in.empty() ? "" : "more than ") +
                    std::to_string(produced) + " bytes" +
                    (rc == Z_STREAM_END ? "" : " (cut short)") + ", not the index's " +
                    std::to_string(size));
  }
  return Status::OK();
}

}  // namespace

Status DecodeChunkFrames(Codec codec, const std::string& path, const ShardChunk& chunk,
                         const std::vector<IndexFrame>& frames, std::string fetched,
                         bool frame_checksums, DecodedChunk* out) {
  const std::string at = path + ": chunk at file offset " + std::to_string(chunk.file_offset);
  if (fetched.size() != chunk.file_bytes) {
    return DataLoss(at + ": read " + std::to_string(fetched.size()) + " of its " +
                    std::to_string(chunk.file_bytes) + " bytes (the shard is shorter)");
  }
  out->frame_starts.clear();
  if (codec == Codec::kNone) {
    out->spare = std::move(out->bytes);
    out->bytes = std::move(fetched);
    return Status::OK();
  }
  out->bytes.resize(chunk.decoded_bytes);
  uint64_t produced = 0;
  for (const IndexFrame& f : frames) {
    const uint64_t begin = f.file_offset - chunk.file_offset;
    if (f.file_offset < chunk.file_offset || begin + f.file_bytes > fetched.size() ||
        produced + f.uncompressed_bytes > chunk.decoded_bytes) {
      return DataLoss(at + ": frame at file offset " + std::to_string(f.file_offset) +
                      " lies outside its chunk (index changed?)");
    }
    const std::string where = path + ": " + std::string(CodecName(codec)) +
                              " frame at file offset " + std::to_string(f.file_offset);
    ByteView in = ByteView(fetched).substr(begin, f.file_bytes);
    char* dst = out->bytes.data() + produced;
    SLUICE_RETURN_IF_ERROR(codec == Codec::kZstd
                               ? DecodeZstd(in, dst, f.uncompressed_bytes, frame_checksums, where)
                               : DecodeGzip(in, dst, f.uncompressed_bytes, where));
    out->frame_starts.push_back(produced);
    produced += f.uncompressed_bytes;
  }
  out->bytes.resize(produced);  // a recycled buffer (ChunkCache) holds nothing beyond
  out->spare = std::move(fetched);
  return Status::OK();
}

}  // namespace sluice::format

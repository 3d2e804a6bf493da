// Decoding a fetched chunk (sluice/format/shard_chunks.h): shared by the ShardReader's
// DecodeChunk and its tests.
#pragma once

#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/format/shard_chunks.h"

namespace sluice::format {

// Decodes `fetched` (exactly the chunk's file bytes) whose index frames are `frames` (in
// order, [chunk.first_frame, + chunk.frames)) into *out: codec none keeps the bytes as they
// are; zstd and gzip decode each frame into place and record where it starts. Every frame
// must decode to exactly its index size. Errors name `path` and the frame's file offset.
// `frame_checksums`: check each zstd frame's content checksum (XXH64). A reader that checks
// every record's CRCs before handing it on (verify_crc) passes false: the records' CRCs
// catch what the frame checksum would, and skipping it saves ~14% of a decode.
Status DecodeChunkFrames(Codec codec, const std::string& path, const ShardChunk& chunk,
                         const std::vector<IndexFrame>& frames, std::string fetched,
                         bool frame_checksums, DecodedChunk* out);

}  // namespace sluice::format

// The text path as pipeline stages (docs/text.md, "Pipeline stages"): tokenize a bytes
// feature, pack token sequences into fixed-length rows, and read a token cache as a dataset.
// Padding and bucketing are the pipeline's own padded_batch / bucket_by_length stages.
//
//   auto tok = text::Tokenizer::Open(fs, "spm.model");
//   auto ds = text::Pack(text::Tokenize(Dataset::Read(...)->Shuffle({}).ParseExample(
//                            {{"text", DType::kString}}), *tok, {.feature = "text"}),
//                        {.seq_len = 2048, .eos_id = 2}).Batch(8);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/text/packing.h"
#include "sluice/text/token_cache.h"
#include "sluice/text/tokenizer.h"

namespace sluice::text {

struct TokenizeOptions {
  std::string feature = "text";   // Default: "text"; a scalar string (bytes) feature
  std::string output = "tokens";  // Default: "tokens"; int32 [-1]. May equal `feature`
  // Invalid UTF-8 is a record error under the stage's on_error policy (raise names the
  // record's shard and index; skip/quarantine drop it). true tokenizes it anyway, the bad
  // bytes becoming U+FFFD as in SentencePiece. Default: false
  bool replace_invalid_utf8 = false;
  std::optional<pipeline::ErrorPolicy> on_error;  // Default: PipelineOptions::on_error
  int parallelism = pipeline::kAutotune;          // Default: autotune (as map)
};

// Adds `output`: the ids of `feature` under `tokenizer` (equal to Tokenizer::Encode). The
// tokenizer is shared by the pipeline's threads and kept alive by the dataset.
pipeline::Dataset Tokenize(const pipeline::Dataset& input,
                           std::shared_ptr<const Tokenizer> tokenizer,
                           const TokenizeOptions& options = {});

struct PackOptions {
  std::string feature = "tokens";  // Default: "tokens"; int32 or int64 [-1]
  // seq_len, eos_id, pad_id, continue_positions, drop_remainder: see PackingOptions.
  PackingOptions packing;
};

// Each output element is one sequence of exactly seq_len tokens with features `tokens`,
// `segment_ids` and `position_ids` (int32 [seq_len]); other input features are dropped.
// State: the record positions of the documents the unfinished sequence holds (usually one
// or two) and the offset into the first; restore re-reads them through the input, so the
// pipeline below must be able to re-produce single records (read, map, parse_example,
// tokenize can; a buffer shuffle or bucket_by_length below pack cannot).
pipeline::Dataset Pack(const pipeline::Dataset& input, const PackOptions& options);

// A token cache (<prefix>.bin/.idx, docs/text-format.md) as a record source of one shard:
// record i is document i's ids as stored (little-endian uint16 or uint32), zero copy.
Result<std::shared_ptr<pipeline::RecordSource>> OpenTokenCacheSource(io::FileSystem* fs,
                                                                     const std::string& prefix);

// The records of a token cache source (ids as stored, `width` each) widened to an int32
// tensor `output`, the only feature. After any shuffle / shard of the source.
pipeline::Dataset DecodeTokenCacheRecords(const pipeline::Dataset& source, TokenWidth width,
                                          const std::string& output = "tokens");
// The width of the cache's ids (reads the index header), for DecodeTokenCacheRecords.
Result<TokenWidth> TokenCacheWidth(io::FileSystem* fs, const std::string& prefix);

struct TokenCacheDatasetOptions {
  io::FileSystem* fs = nullptr;                     // Default: the local file system
  std::optional<pipeline::ShuffleOptions> shuffle;  // Default: none (document order)
  uint32_t rank = 0, world_size = 1;                // Default: 0 of 1 (no sharding)
  pipeline::ReadOptions read;                       // Default: ReadOptions's defaults
  std::string output = "tokens";                    // Default: "tokens" (int32 [-1])
};

// read (+ shuffle + shard) over OpenTokenCacheSource, then the ids widened to int32: every
// document becomes an element {tokens}. Global shuffle, sharding and resume work as for shards.
Result<pipeline::Dataset> ReadTokenCache(const std::string& prefix,
                                         const TokenCacheDatasetOptions& options = {});

}  // namespace sluice::text

// ShardWriter: writes a dataset as a sequence of shards of a target size, plus the
// dataset.json manifest. Shards are named "<prefix>-00000-of-00012.tfrecord.zst"; since the
// count is known only at the end, they are written under temporary names and renamed on
// Close. A crash leaves no file under a final name.
#pragma once

#include <memory>
#include <string>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/manifest.h"
#include "sluice/format/record_writer.h"

namespace sluice::format {

struct ShardWriterOptions {
  RecordWriterOptions record;                 // codec and its settings
  uint64_t target_shard_bytes = 100'000'000;  // Default: 100 MB (of file bytes)
  std::string prefix = "data";                // Default: "data"
};

// Sticky failure; Close() required. Threading: not thread-safe.
class ShardWriter {
 public:
  static Result<std::unique_ptr<ShardWriter>> Open(io::FileSystem* fs, const std::string& dir,
                                                   const ShardWriterOptions& options = {});
  virtual ~ShardWriter() = default;

  virtual Status Write(ByteView record) = 0;
  // Records the schema (and metadata) to put in the manifest.
  virtual void SetFeatures(std::map<std::string, FeatureSchema> features) = 0;
  virtual void SetMetadata(const std::string& key, const std::string& value) = 0;
  // Finishes the last shard, renames all shards to their final names, writes dataset.json.
  virtual Status Close() = 0;

  virtual uint64_t records_written() const = 0;
  virtual const Manifest& manifest() const = 0;  // complete after Close()
};

}  // namespace sluice::format

// ShardWriter: writes a dataset as a sequence of shards of a target size, plus the
// dataset.json manifest. Shards are named "<prefix>-<run>-00000.tfrecord.zst" by the run id
// of the writer's DatasetPublisher, so they cannot collide with another writer's or a
// published dataset's files; Close publishes dataset.json in one step, the dataset's commit
// point (docs/manifest.md). Until then readers see no dataset, and a crash leaves only files
// that the next writer (or `sluice clean`) reclaims.
#pragma once

#include <memory>
#include <string>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/dataset_publisher.h"
#include "sluice/format/manifest.h"
#include "sluice/format/record_writer.h"

namespace sluice::format {

struct ShardWriterOptions {
  RecordWriterOptions record;                 // codec and its settings
  uint64_t target_shard_bytes = 100'000'000;  // Default: 100 MB (of file bytes)
  std::string prefix = "data";                // Default: "data"
  // Replace a published dataset at Close (atomically) instead of refusing it at Open.
  // Default: false.
  bool overwrite = false;
  std::string command;            // names the writer in the directory's lock. Default: ""
  ProcessProbe* probe = nullptr;  // Default: ThisProcess() (tests inject dead writers)
  // A writer that is one part of a bigger run (an MPI rank, a table commit) gets the run's id
  // and optionally a part tag ("r0003": shards "<prefix>-<run>-r0003-00000..."); it neither
  // locks nor publishes: Close only finishes its shards, listed with path, records,
  // file_bytes and index in manifest().shards, for the run's DatasetPublisher (or a table
  // commit) to publish. Default: "" = a run of its own, published at Close.
  std::string run_id;
  std::string part;
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
  // Writes a whole file that belongs to the dataset ("<stem>-<run><extension>", e.g. a
  // class list) and returns its name relative to the directory, to put in the metadata
  // under a key ending in "_file". Only for a writer that publishes.
  virtual Result<std::string> WriteSideFile(std::string_view stem, std::string_view extension,
                                            ByteView data) = 0;
  // Finishes the last shard and publishes dataset.json (the commit point). Any failure, and
  // destruction without Close, deletes every file of this run.
  virtual Status Close() = 0;

  virtual uint64_t records_written() const = 0;
  virtual const Manifest& manifest() const = 0;  // complete after Close()
  virtual const std::string& run_id() const = 0;
  // Files of interrupted runs deleted when this writer started (DatasetPublisher::Begin).
  virtual const std::vector<Leftover>& reclaimed() const = 0;
};

}  // namespace sluice::format

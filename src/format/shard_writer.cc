// ShardWriter: rolls RecordWriters at a target file size, then publishes dataset.json through
// a DatasetPublisher.
//
// File life cycle. Shard k is written through a RecordWriter as "<prefix>-<run>-0000k.tfrecord
// .zst" (the RecordWriter itself writes a temporary and renames it on its Close): its final
// name from the start, unique to the run, so nothing is renamed at the end. Close publishes
// dataset.json, the commit point. Any failure, and destruction without Close, deletes every
// file of the run (DatasetPublisher::Abort), so a dataset.json exists only for a complete
// dataset, and what a crash leaves is reclaimed by the next writer.
#include "sluice/format/shard_writer.h"

#include <cstdio>

#include "sluice/format/shard_index.h"

namespace sluice::format {
namespace {

std::string ShardNumber(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%05llu", static_cast<unsigned long long>(i));
  return buf;
}

// Predicts the size a shard file will have once its pending (not yet compressed) frame is
// flushed, from the compression ratio of the frames flushed so far. RecordWriter reports
// only flushed bytes, so without this a zstd shard would overshoot by up to a frame.
class ShardSizeEstimator {
 public:
  uint64_t Estimate(const RecordWriter& w) {
    uint64_t file = w.file_bytes();
    uint64_t framed = w.framed_bytes();
    if (file != file_at_flush_) {  // a frame was flushed since the last call
      file_at_flush_ = file;
      framed_at_flush_ = framed;
    }
    double ratio = framed_at_flush_ == 0 ? 1.0
                                         : static_cast<double>(file_at_flush_) /
                                               static_cast<double>(framed_at_flush_);
    return file + static_cast<uint64_t>(static_cast<double>(framed - framed_at_flush_) * ratio);
  }

 private:
  uint64_t file_at_flush_ = 0;
  uint64_t framed_at_flush_ = 0;
};

class ShardWriterImpl final : public ShardWriter {
 public:
  // `publisher` is null for a part of a bigger run (options.run_id set).
  ShardWriterImpl(io::FileSystem* fs, std::string dir, ShardWriterOptions options,
                  std::unique_ptr<DatasetPublisher> publisher)
      : fs_(fs),
        dir_(std::move(dir)),
        options_(std::move(options)),
        publisher_(std::move(publisher)),
        run_(publisher_ ? publisher_->run_id() : options_.run_id) {
    manifest_.tool = std::string("sluice ") + SLUICE_VERSION;
    manifest_.codec = options_.record.codec;
    manifest_.run = run_;
  }
  ~ShardWriterImpl() override {
    if (!closed_) DeleteEverything();
  }

  Status Write(ByteView record) override;
  Status Close() override;
  void SetFeatures(std::map<std::string, FeatureSchema> features) override {
    manifest_.features = std::move(features);
  }
  void SetMetadata(const std::string& key, const std::string& value) override {
    manifest_.metadata[key] = value;
  }
  Result<std::string> WriteSideFile(std::string_view stem, std::string_view extension,
                                    ByteView data) override {
    if (publisher_ == nullptr) {
      return FailedPrecondition("ShardWriter for " + dir_ + ": a part writer has no side files");
    }
    return publisher_->WriteFile(stem, extension, data);
  }
  uint64_t records_written() const override { return records_; }
  const Manifest& manifest() const override { return manifest_; }
  const std::string& run_id() const override { return run_; }
  const std::vector<Leftover>& reclaimed() const override {
    static const std::vector<Leftover> none;
    return publisher_ ? publisher_->reclaimed() : none;
  }

 private:
  // "<prefix>-<run>[-<part>]-<i>.tfrecord<ext>"
  std::string ShardName(uint64_t i) const {
    std::string name = options_.prefix + "-" + run_ + "-";
    if (!options_.part.empty()) name += options_.part + "-";
    return name + ShardNumber(i) + ".tfrecord" + std::string(CodecExtension(options_.record.codec));
  }
  std::string InDir(const std::string& name) const { return io::JoinPath(dir_, name); }

  Status Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
    return status_;
  }
  Status StartShard();
  Status FinishShard();
  void DeleteEverything();

  io::FileSystem* const fs_;
  const std::string dir_;
  const ShardWriterOptions options_;
  std::unique_ptr<DatasetPublisher> publisher_;
  const std::string run_;
  std::unique_ptr<RecordWriter> current_;  // null between shards
  ShardSizeEstimator estimator_;
  uint64_t records_ = 0;
  Manifest manifest_;
  Status status_;  // sticky: the first error wins
  bool closed_ = false;
};

Status ShardWriterImpl::StartShard() {
  std::string name = ShardName(manifest_.shards.size());
  SLUICE_ASSIGN_OR_RETURN(current_, RecordWriter::Open(fs_, InDir(name), options_.record));
  estimator_ = ShardSizeEstimator();
  return Status::OK();
}

// Closes the current shard and lists it in the manifest.
Status ShardWriterImpl::FinishShard() {
  std::unique_ptr<RecordWriter> w = std::move(current_);
  ManifestShard entry;
  entry.path = ShardName(manifest_.shards.size());
  entry.records = w->records_written();
  SLUICE_RETURN_IF_ERROR(w->Close());
  if (options_.record.write_index) entry.index = ShardIndex::IndexPathFor(entry.path);
  SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, fs_->Stat(InDir(entry.path)));
  entry.file_bytes = info.size;
  manifest_.shards.push_back(std::move(entry));
  return Status::OK();
}

Status ShardWriterImpl::Write(ByteView record) {
  if (!status_.ok()) return status_;
  if (closed_) return FailedPrecondition("ShardWriter for " + dir_ + ": Write after Close");
  if (current_ == nullptr) {
    Status s = StartShard();
    if (!s.ok()) return Fail(std::move(s));
  }
  Status s = current_->Write(record);
  if (!s.ok()) return Fail(std::move(s));
  ++records_;
  // Roll once the file reaches the target: shards overshoot by at most about one record,
  // and the next shard is opened lazily so the last one is never empty.
  if (estimator_.Estimate(*current_) >= options_.target_shard_bytes) {
    s = FinishShard();
    if (!s.ok()) return Fail(std::move(s));
  }
  return Status::OK();
}

Status ShardWriterImpl::Close() {
  if (closed_) return status_;
  if (status_.ok() && current_ != nullptr) status_ = FinishShard();
  if (status_.ok() && publisher_ != nullptr) status_ = publisher_->Commit(manifest_);
  closed_ = true;
  if (!status_.ok()) DeleteEverything();
  return status_;
}

// Best effort. A publishing writer deletes every file named by its run (temporaries
// included) and releases the lock; a part writer deletes the shards it wrote.
void ShardWriterImpl::DeleteEverything() {
  current_.reset();  // an unclosed RecordWriter aborts and removes its temporary
  if (publisher_ != nullptr) {
    publisher_->Abort();
  } else {
    for (const std::string& f : manifest_.Files()) (void)fs_->Delete(InDir(f));
  }
  manifest_.shards.clear();
}

}  // namespace

Result<std::unique_ptr<ShardWriter>> ShardWriter::Open(io::FileSystem* fs, const std::string& dir,
                                                       const ShardWriterOptions& options) {
  if (options.prefix.empty() || options.prefix.find('/') != std::string::npos) {
    return InvalidArgument("shard prefix '" + options.prefix + "' must be a non-empty file name");
  }
  if (options.target_shard_bytes == 0) return InvalidArgument("target_shard_bytes must be > 0");
  if (!options.run_id.empty()) {  // a part of a bigger run: its publisher locked the directory
    if (!IsRunId(options.run_id)) {
      return InvalidArgument("run id '" + options.run_id + "': expected 12 lowercase hex digits");
    }
    if (options.part.find_first_of("/.") != std::string::npos) {
      return InvalidArgument("part tag '" + options.part + "' must not hold '/' or '.'");
    }
    return std::unique_ptr<ShardWriter>(new ShardWriterImpl(fs, dir, options, nullptr));
  }
  PublishOptions publish;
  publish.overwrite = options.overwrite;
  publish.command = options.command;
  publish.probe = options.probe;
  SLUICE_ASSIGN_OR_RETURN(auto publisher, DatasetPublisher::Begin(fs, dir, publish));
  return std::unique_ptr<ShardWriter>(new ShardWriterImpl(fs, dir, options, std::move(publisher)));
}

}  // namespace sluice::format

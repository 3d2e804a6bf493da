// ShardWriter: rolls RecordWriters at a target file size, then gives the shards their
// final "-of-N" names and writes dataset.json.
//
// File life cycle. Shard k is first written through a RecordWriter as
// "<prefix>-0000k.tfrecord.zst" (the RecordWriter itself writes a temporary and renames on
// its Close). Only ShardWriter::Close, once the count N is known, renames every shard and
// its index to "<prefix>-0000k-of-0000N..." and then writes dataset.json. Any failure, and
// destruction without Close, deletes whatever this writer created, so a final "-of-" name
// or a dataset.json exists only for a complete dataset.
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
  ShardWriterImpl(io::FileSystem* fs, std::string dir, ShardWriterOptions options)
      : fs_(fs), dir_(std::move(dir)), options_(std::move(options)) {
    manifest_.tool = std::string("sluice ") + SLUICE_VERSION;
    manifest_.codec = options_.record.codec;
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
  uint64_t records_written() const override { return records_; }
  const Manifest& manifest() const override { return manifest_; }

 private:
  // A shard whose RecordWriter closed successfully, still under its provisional name.
  struct FinishedShard {
    std::string name;  // provisional file name inside dir_
    uint64_t records = 0;
  };

  std::string ShardName(uint64_t i, uint64_t count) const {
    std::string name = options_.prefix + "-" + ShardNumber(i);
    if (count > 0) name += "-of-" + ShardNumber(count);
    return name + ".tfrecord" + std::string(CodecExtension(options_.record.codec));
  }
  std::string InDir(const std::string& name) const { return io::JoinPath(dir_, name); }
  bool has_index() const { return options_.record.write_index; }

  Status Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
    return status_;
  }
  Status StartShard();
  Status FinishShard();
  Status Finalize();
  void DeleteEverything();

  io::FileSystem* const fs_;
  const std::string dir_;
  const ShardWriterOptions options_;
  std::unique_ptr<RecordWriter> current_;  // null between shards
  ShardSizeEstimator estimator_;
  std::vector<FinishedShard> finished_;
  uint64_t records_ = 0;
  Manifest manifest_;
  Status status_;  // sticky: the first error wins
  bool closed_ = false;
};

Status ShardWriterImpl::StartShard() {
  std::string name = ShardName(finished_.size(), 0);
  SLUICE_ASSIGN_OR_RETURN(current_, RecordWriter::Open(fs_, InDir(name), options_.record));
  estimator_ = ShardSizeEstimator();
  return Status::OK();
}

Status ShardWriterImpl::FinishShard() {
  std::unique_ptr<RecordWriter> w = std::move(current_);
  uint64_t records = w->records_written();
  SLUICE_RETURN_IF_ERROR(w->Close());
  finished_.push_back({ShardName(finished_.size(), 0), records});
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

// Renames every finished shard (and index) to its "-of-N" name and fills the manifest.
Status ShardWriterImpl::Finalize() {
  const uint64_t count = finished_.size();
  manifest_.shards.clear();
  for (uint64_t i = 0; i < count; ++i) {
    ManifestShard entry;
    entry.path = ShardName(i, count);
    entry.records = finished_[i].records;
    SLUICE_RETURN_IF_ERROR(fs_->Rename(InDir(finished_[i].name), InDir(entry.path)));
    finished_[i].name = entry.path;  // from now on DeleteEverything finds it here
    if (has_index()) {
      entry.index = ShardIndex::IndexPathFor(entry.path);
      SLUICE_RETURN_IF_ERROR(
          fs_->Rename(InDir(ShardIndex::IndexPathFor(ShardName(i, 0))), InDir(entry.index)));
    }
    SLUICE_ASSIGN_OR_RETURN(io::FileInfo info, fs_->Stat(InDir(entry.path)));
    entry.file_bytes = info.size;
    manifest_.shards.push_back(std::move(entry));
  }
  return manifest_.Save(fs_, dir_);
}

Status ShardWriterImpl::Close() {
  if (closed_) return status_;
  if (status_.ok() && current_ != nullptr) status_ = FinishShard();
  if (status_.ok()) status_ = Finalize();
  closed_ = true;
  if (!status_.ok()) DeleteEverything();
  return status_;
}

// Best effort: a file may exist under its provisional or its final name (or, for an index
// whose shard was renamed first, under its provisional one), so both are tried.
void ShardWriterImpl::DeleteEverything() {
  current_.reset();  // an unclosed RecordWriter aborts and removes its temporary
  const uint64_t count = finished_.size();
  for (uint64_t i = 0; i < count; ++i) {
    for (const std::string& name : {ShardName(i, 0), ShardName(i, count)}) {
      (void)fs_->Delete(InDir(name));
      if (has_index()) (void)fs_->Delete(InDir(ShardIndex::IndexPathFor(name)));
    }
  }
  finished_.clear();
  manifest_.shards.clear();
}

}  // namespace

Result<std::unique_ptr<ShardWriter>> ShardWriter::Open(io::FileSystem* fs, const std::string& dir,
                                                       const ShardWriterOptions& options) {
  if (options.prefix.empty() || options.prefix.find('/') != std::string::npos) {
    return InvalidArgument("shard prefix '" + options.prefix + "' must be a non-empty file name");
  }
  if (options.target_shard_bytes == 0) return InvalidArgument("target_shard_bytes must be > 0");
  SLUICE_RETURN_IF_ERROR(fs->CreateDirs(dir));
  // Writing into a finished dataset would mix two datasets under one manifest.
  std::string manifest = io::JoinPath(dir, Manifest::kFileName);
  if (fs->Exists(manifest)) {
    return AlreadyExists(manifest + " exists: refusing to write a dataset over another one");
  }
  return std::unique_ptr<ShardWriter>(new ShardWriterImpl(fs, dir, options));
}

}  // namespace sluice::format

// DatasetPublisher: the commit point of a dataset directory (docs/manifest.md, "Commit
// point"). One run (a `sluice convert`, a ShardWriter; later an MPI conversion) goes through:
//  1. Begin: take the directory's WriterLock, so that a second writer is refused before it
//     writes anything; refuse a published dataset unless overwriting; reclaim the leftovers
//     of dead runs.
//  2. Write files under names that carry the run id ("data-3f9a2c1b7d04-00000.tfrecord.zst"),
//     so nothing a run writes can collide with another run's files or a published dataset's.
//  3. Commit: publish dataset.json in one step, put-if-absent for a new dataset or an atomic
//     replacement with `overwrite`. This is the commit point: before it readers find no
//     dataset (or the previous one), after it the complete new one.
//  4. After the commit: delete the replaced dataset's files and other leftovers, then release
//     the lock. A crash here leaves only leftovers, which the next run or `sluice clean`
//     reclaims and `sluice verify` reports.
// The table (issue 15) commits `_delta_log/N.json` with the same put-if-absent and names its
// data files by run id; an MPI conversion (issue 17) runs Begin/Commit on one rank while every
// rank writes shards named by the broadcast run id (ShardWriterOptions::run_id, part).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/format/manifest.h"
#include "sluice/format/writer_lock.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

// A fresh run id: 12 lowercase hex digits (48 random bits).
std::string NewRunId();
bool IsRunId(std::string_view text);
// The run id a file name carries ("-<12 hex>-" or "-<12 hex>." inside the name), if any.
std::optional<std::string> RunIdOfFileName(std::string_view name);

// A file in a dataset directory that belongs to no published dataset and to no live writer.
struct Leftover {
  std::string path;
  std::string reason;  // "file of run 3f9a2c1b7d04, which did not publish it"
};
// The leftovers of `dir`: files named by a run id that `published` (may be null) does not
// reference, writers' temporaries, and lock entries of dead writers or superseded ones. The
// files of the live lock holder and of `own_run` are never leftovers.
Result<std::vector<Leftover>> FindLeftovers(io::FileSystem* fs, const std::string& dir,
                                            const Manifest* published,
                                            std::string_view own_run = {},
                                            ProcessProbe* probe = nullptr);

// For a directory without dataset.json: FailedPrecondition when it holds the unpublished
// output of a writer (a held lock, or shards named by a run id), so that readers never take
// part of a dataset for a whole one. `files` is the directory's listing.
Status CheckNoUnpublishedRun(io::FileSystem* fs, const std::string& dir,
                             const std::vector<io::FileInfo>& files);

struct PublishOptions {
  // Replace a published dataset (atomically, at Commit) instead of refusing to start.
  // Default: false.
  bool overwrite = false;
  std::string command;            // names the writer in its lock, e.g. "sluice convert jsonl"
  ProcessProbe* probe = nullptr;  // Default: ThisProcess()
  std::string run_id;             // Default: "" = NewRunId()
};

// Threading: not thread-safe; one owner.
class DatasetPublisher {
 public:
  static Result<std::unique_ptr<DatasetPublisher>> Begin(io::FileSystem* fs, const std::string& dir,
                                                         const PublishOptions& options = {});
  ~DatasetPublisher();  // without a Commit: Abort()

  const std::string& run_id() const { return run_; }
  const std::string& dir() const { return dir_; }
  // Leftovers of earlier runs deleted by Begin.
  const std::vector<Leftover>& reclaimed() const { return reclaimed_; }

  // A name for a file of this run: "<stem>-<run><extension>" (stem: no '/').
  std::string RunFileName(std::string_view stem, std::string_view extension) const;
  // Writes a whole file of this run into dir (temporary name + rename) and returns its name
  // relative to dir, for the manifest (e.g. metadata "classes_file").
  Result<std::string> WriteFile(std::string_view stem, std::string_view extension, ByteView data);

  // The commit point: publishes `manifest` (its `run` set to this run) as dir/dataset.json,
  // then deletes what it replaced and releases the lock. AlreadyExists when another writer
  // published first (this run's files are deleted then). Errors after the commit point are
  // not reported: the dataset is published; what is left over is reclaimed later.
  Status Commit(Manifest manifest);
  // Deletes every file of this run and releases the lock. Idempotent; no-op after Commit.
  void Abort();

 private:
  DatasetPublisher(io::FileSystem* fs, std::string dir, std::string run, PublishOptions options)
      : fs_(fs), dir_(std::move(dir)), run_(std::move(run)), options_(std::move(options)) {}
  Status TakeLock();
  void DeleteReplacedFiles(const Manifest& published);

  io::FileSystem* const fs_;
  const std::string dir_;
  const std::string run_;
  const PublishOptions options_;
  std::unique_ptr<WriterLock> lock_;
  std::optional<Manifest> replaced_;  // the published dataset an overwrite replaces
  std::vector<Leftover> reclaimed_;
  bool done_ = false;  // committed or aborted
};

}  // namespace sluice::format

// The FileSystem interface: every byte sluice reads or writes goes through it, so remote
// stores (S3, HDFS) and a node-local cache tier drop in without touching format or pipeline
// code. Paths are plain strings; FileSystemFor() dispatches URIs to an implementation.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/io/read_ranges.h"

namespace sluice {
class ThreadPool;
}

namespace sluice::io {

// Cancellation shared by the asynchronous reads of one reader (an iterator, a fetcher):
// once Cancel() is called, reads not yet finished complete promptly with Cancelled.
// Threading: all methods may be called from any thread.
class CancelToken {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> cancelled_{false};
};

// What an asynchronous read runs with: where its blocking work may run and how it is
// cancelled (one context per caller, as arrow's IOContext).
struct IoContext {
  // Runs blocking reads of file systems that have no asynchronous engine of their own.
  // Default (nullptr): the process-wide I/O executor, IoExecutor().
  ThreadPool* executor = nullptr;
  // Default (nullptr): not cancellable.
  std::shared_ptr<const CancelToken> cancel;
  // Where the bytes of a read go: a buffer for n bytes (it may be longer; the read resizes
  // it, so a reused buffer costs no zero fill and no fresh pages). S3 receives the body into
  // it (one ranged GET) or gathers the parts there; WebHDFS ignores it. Default (empty): a
  // new string.
  std::function<std::string(size_t n)> buffer;
};

// The process-wide executor for blocking I/O (a small pool separate from pipeline pools, so
// a slow read never occupies a pipeline thread). Created on first use, never destroyed.
ThreadPool* IoExecutor();

// Receives the result of an asynchronous read: the bytes (owned), or an error.
using ReadCallback = std::function<void(Result<std::string>)>;
// Receives the bytes of each range of a ReadRangesAsync call in the order asked, or the
// first error.
using RangesCallback = std::function<void(Result<std::vector<std::string>>)>;

// Starts n reads (start(i, done_i) for each i) and calls `done` once with all their bytes
// in order, or the first error, when the last has finished; with n = 0 on the context's
// executor (never inside the call).
void GatherReads(size_t n, const std::function<void(size_t i, ReadCallback done)>& start,
                 RangesCallback done, const IoContext& context);

// A read-only view of a whole file that stays valid while this object lives. What
// RandomAccessFile::Map() returns; readers that want zero-copy random access over a file
// (the token cache) hold one.
// Threading: data() may be read from many threads at once.
class FileMapping {
 public:
  virtual ~FileMapping() = default;
  virtual ByteView data() const = 0;
  // True when data() is a memory map of the file (pages load on first touch), false when it
  // is a private copy read into memory.
  virtual bool is_mapped() const = 0;
};

// A file opened for positional reads.
// Threading: every method is safe to call concurrently from many threads (reads are
// positional; there is no shared cursor), which is what lets a reader keep many reads in
// flight on one file.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  virtual const std::string& path() const = 0;
  // Size at open time.
  virtual uint64_t size() const = 0;
  // Reads up to n bytes starting at `offset`. The result views `scratch` (which must hold n
  // bytes) or memory owned by the file (e.g. a mapping, valid while the file lives). It is
  // shorter than n only when the file ends first; an offset at or past the end gives an
  // empty view, not an error.
  virtual Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const = 0;
  // Read() past any cache layered over the file (CachedFileSystem): for a few bytes read once,
  // before a plan names the chunk they sit in (an open's header checks), which a cache would
  // fetch as a whole block and then again as the planned chunk. Default: Read().
  virtual Result<ByteView> ReadUncached(uint64_t offset, size_t n, char* scratch) const {
    return Read(offset, n, scratch);
  }
  // The whole file (its size at open time) as one view that is aligned to at least 16
  // bytes and outlives this file object. Default: reads the file into memory, which is right
  // for file systems that cannot map (remote stores); the local file system maps it (mmap),
  // so only the pages touched are read. A local file truncated by someone else while mapped
  // makes later accesses fault (SIGBUS): sluice writers never truncate in place, they rename.
  virtual Result<std::unique_ptr<FileMapping>> Map() const;
  // Whether Map() maps the file in place (FileMapping::is_mapped()) rather than reading it
  // into memory: what a reader asks before mapping a file only to avoid copying it.
  // Default: false; the local file system: true for a non-empty file.
  virtual bool MapsInPlace() const { return false; }

  // Asynchronous ranged read of [offset, offset + n), clipped at the end of the file (an
  // offset at or past the end gives empty bytes). `done` is called exactly once, never from
  // inside ReadAsync itself (so a caller may hold its own locks while calling), on an I/O
  // thread; with a cancelled context it may complete with Cancelled. The file must outlive
  // its pending reads: a caller cancels and waits for its callbacks before destroying it.
  // Default: the blocking Read() run on `context.executor`; remote file systems override it
  // with requests in flight that hold no thread.
  virtual void ReadAsync(uint64_t offset, size_t n, ReadCallback done,
                         const IoContext& context = {}) const;
  // The blocking read ReadAsync runs by default: up to n bytes at `offset` (none past the
  // end) into `buffer` (a recycled one may be longer: it shrinks without writing).
  Result<std::string> ReadInto(uint64_t offset, size_t n, std::string buffer) const;
  // Many ranges in one call (a reader's upcoming chunks), with ReadAsync's contract for each
  // (clipped at the end of the file; `done` once, never inside this call). Default: one
  // ReadAsync per range; S3 merges nearby ranges into fewer requests (CoalesceRanges).
  virtual void ReadRangesAsync(std::vector<ByteRange> ranges, RangesCallback done,
                               const IoContext& context = {}) const;
};

// Durability: what a power cut (or an OS crash) leaves, not only a crash of the process.
// On a durable file system each of these calls has reached stable storage when it returns OK:
//   - WritableFile::Close() of a file opened with WriteOptions::durable (the default): the
//     whole file under its final name;
//   - PutIfAbsent(): the whole file under `path`;
//   - Rename(): the file under its new name, and no longer under the old one;
//   - CreateDirs(): the directories it created.
// So a writer that closes its data files and only then makes its commit record (a put-if-
// absent, or a rename) knows that a commit record which survives a power cut names only files
// that survived too (docs/durability.md). Delete() is not durable: after a power cut a deleted
// file may be back, so a deletion must never be what commits. Append() alone promises
// nothing until Close(). Before these calls return, a power cut may leave the old state or
// the new one (never a part of a file under a final name), and temporaries of writers that
// were running.
//   Local disk: durable unless LocalFileSystemOptions::sync is false or the environment
//   variable SLUICE_SYNC is "0" (scratch data): fdatasync(2) of a file before its rename(2)
//   or link(2), fsync(2) of the directory after it, as LevelDB and Kafka do.
//   S3: durable by the protocol: a PUT (or a multipart upload's completion) returns only once
//   the object is stored.
//   HDFS: a closed file is complete on its DataNodes' write pipeline (every replica has it;
//   not hsync'ed to their disks: losing power on all replicas at once may lose it).
//   Memory: nothing outlives the process.

// A file being written sequentially.
// Threading: not thread-safe; one writer at a time.
// Atomicity: bytes appear under the final name only when Close() succeeds (the
// implementation writes a temporary name and renames it). Destroying an unclosed file, or
// Abort(), removes the temporary, so a crash never leaves a half file under the final name.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual const std::string& path() const = 0;  // the final name
  virtual Status Append(ByteView data) = 0;
  // Flushes, makes the file durable unless opened with WriteOptions::durable = false (above,
  // "Durability"), and renames into place. Reports the final status; calling it twice
  // returns the first result.
  virtual Status Close() = 0;
  virtual void Abort() = 0;
  virtual uint64_t bytes_written() const = 0;
};

struct FileInfo {
  std::string path;  // full path as passed to the FileSystem
  uint64_t size = 0;
  bool is_directory = false;
  // Last modification, in milliseconds since the Unix epoch; 0 when the file system does not
  // know it. Vacuum's retention and a table's commit times rely on it (docs/table.md).
  int64_t modification_time_ms = 0;
  // This version of the file's identity where the file system has one (S3: the ETag, as
  // listed); empty otherwise.
  std::string etag = "";
};

struct WriteOptions {
  // Close() makes the file durable (above, "Durability"). Default: true. false for scratch
  // files that nothing commits and that are recomputed when lost (spill runs, temporary
  // copies): they then cost no sync.
  bool durable = true;
};

// Threading: all methods are safe to call concurrently.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual std::string_view name() const = 0;  // "local", "memory", ...
  // Whether a read is a request to another machine (S3, HDFS, a cache in front of them):
  // every file system but "local" and "memory".
  bool is_remote() const { return name() != "local" && name() != "memory"; }
  // Whether RandomAccessFile::ReadRangesAsync fetches adjacent ranges in fewer requests than
  // one each (S3: CoalesceRanges), so a reader gains by asking for them together. Not a
  // cache in front of remote storage: it fetches the chunks it was told of, one by one.
  // Default: false.
  virtual bool merges_ranges() const { return false; }

  virtual Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) = 0;
  // Opens a file a List() of this file system returned, trusting its size and etag: S3 then
  // opens without a HEAD (each GET still checks the ETag, so a file replaced since the
  // listing fails its reads). Default: OpenForRead(listed.path).
  virtual Result<std::unique_ptr<RandomAccessFile>> OpenListedForRead(const FileInfo& listed) {
    return OpenForRead(listed.path);
  }
  virtual Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                             const WriteOptions& options = {}) = 0;
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  // Entries directly inside `dir`, sorted by name.
  virtual Result<std::vector<FileInfo>> List(const std::string& dir) = 0;
  virtual Status Delete(const std::string& path) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Creates `dir` and its missing parents; OK if it exists.
  virtual Status CreateDirs(const std::string& dir) = 0;
  // Writes `data` to `path` only if nothing exists there, atomically: the commit primitive
  // of a transaction log and of manifest publication (local disk: link(2) of a complete
  // temporary file; S3: PUT with `If-None-Match: *`; HDFS: create without overwrite).
  // AlreadyExists when `path` exists (nothing is changed then); of several concurrent calls
  // for one path exactly one succeeds. Readers see no file or all of `data`, never a part.
  // An attempt whose outcome is unknown (the server stored the object, the reply was lost)
  // is repeated and then meets its own object: a remote store (S3) reads back what is there
  // and returns OK when it is exactly `data`, AlreadyExists only for other bytes. So a
  // caller that must tell itself from another writer makes `data` unique (a run id, a
  // commit's txn id): two writers of identical bytes may both see OK.
  // Default: Unimplemented.
  virtual Status PutIfAbsent(const std::string& path, ByteView data);
  // `path` with every symbolic link resolved, as realpath(3): what the path rules of a
  // dataset (io/relative_path.h) compare to keep a manifest's files inside its directory.
  // Default: `path` unchanged (object stores have no links); the local file system resolves.
  virtual Result<std::string> RealPath(const std::string& path) { return path; }
  // Whether `path` is a directory (false when it is a file, is missing or cannot be stat'ed).
  // Default: Stat(path). S3: one listing of one key under "path/" (Stat of a prefix first
  // HEADs an object of that name: a request more).
  virtual bool IsDirectory(const std::string& path);

  // Convenience built on the methods above.
  Result<std::string> ReadAll(const std::string& path);
  Status WriteAll(const std::string& path, ByteView data);
  bool Exists(const std::string& path);
  // Files matching a shell pattern (* ? [..]) in its last path components, sorted.
  Result<std::vector<std::string>> Glob(const std::string& pattern);
};

struct LocalFileSystemOptions {
  // Sync what the durability contract above names (fdatasync of files, fsync of their
  // directories). Default: true. false: nothing is synced, for scratch data that a power
  // cut may lose. The environment variable SLUICE_SYNC=0 (or false/off/no), read at each
  // durable call, turns syncing off in every local file system: how the `sluice` command and
  // Python opt out.
  bool sync = true;
  // Descriptors that open files keep at most; the least recently used ones are closed and
  // their files reopen by path on the next read (a file replaced or changed meanwhile then
  // fails its reads, naming it). Lets a dataset of many thousands of shards be read under
  // `ulimit -n 1024`. Default (0): half the soft RLIMIT_NOFILE at creation, at least 64.
  size_t max_open_files = 0;
};

// The process-wide local file system (pread / write + rename), with default options.
FileSystem* LocalFileSystem();

// A local file system of its own (tests, tools): its own bound on open files.
std::unique_ptr<FileSystem> NewLocalFileSystem(const LocalFileSystemOptions& options);

// A fresh in-memory file system, for tests.
std::unique_ptr<FileSystem> NewMemoryFileSystem();

// Picks the file system for a path or URI: "/x", "x", "file:///x" are local; "s3://bucket/key"
// is S3 (S3FileSystemFromEnvironment; its paths are the whole URIs); "hdfs://namenode:port/x"
// and "webhdfs://..." are HDFS through WebHDFS (WebHdfsFileSystemFromEnvironment, whole URIs
// too; the port is the NameNode's HTTP port, docs/hdfs.md). Other schemes are Unimplemented. On
// success `*local_path` receives the path to hand to the returned file system.
Result<FileSystem*> FileSystemFor(std::string_view uri, std::string* local_path);

// Path helpers ('/' separated).
std::string JoinPath(std::string_view a, std::string_view b);
std::string_view Dirname(std::string_view path);
std::string_view Basename(std::string_view path);

}  // namespace sluice::io

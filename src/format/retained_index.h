// Index files on remote storage, kept in memory. A chunk's decode locates its records
// through the shard's index; read lazily from S3 or HDFS, each span of it is a synchronous
// round trip on a pipeline thread, which left a pipeline reading a dataset from S3 at ~0.2x
// boto3 (bench/s3). Index files are small (a few bytes per record, ~4-12 KiB per shard in
// the benchmarks), so on a remote file system one is read whole at open, in one request,
// and its lookups are served from memory, within a process-wide budget.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

// Larger index files stay on the remote store (read lazily, span by span).
inline constexpr uint64_t kMaxRetainedIndexFileBytes = uint64_t{8} << 20;

// The index file at `path`, for OpenIndexDirectory. On a file system other than "local" and
// "memory", a file up to kMaxRetainedIndexFileBytes is read whole and served from memory
// while the copies held by the process stay within the budget (first come, first kept:
// beyond it files are read lazily, so a dataset whose indexes exceed the budget costs no
// more than before). The copy's bytes are given back when the returned file is destroyed.
// Errors: the open's, or the whole read's.
Result<std::unique_ptr<io::RandomAccessFile>> OpenIndexFile(io::FileSystem* fs,
                                                            const std::string& path);

// Bytes of index files held in memory by the process now.
uint64_t RetainedIndexBytes();
// Sets the budget (default 64 MiB); returns the previous one. For tests and tools.
uint64_t SetRetainedIndexBudget(uint64_t bytes);

}  // namespace sluice::format

// The file objects of the S3 file system (s3_read_file.cc, s3_write_file.cc).
#pragma once

#include <memory>
#include <string>

#include "io/s3_client.h"
#include "sluice/io/file_system.h"

namespace sluice::io {

// A reader of one object version: `etag` is checked on every ranged GET, so an object
// overwritten while open fails reads (FailedPrecondition) instead of mixing two versions.
std::unique_ptr<RandomAccessFile> NewS3ReadFile(std::shared_ptr<S3Client> client, S3Path path,
                                                uint64_t size, std::string etag);

// A writer that buffers up to one part, then uploads parts in parallel (multipart upload);
// Close() completes the upload (or PUTs a small object whole), Abort() and failures abort
// it, so the object appears only complete.
std::unique_ptr<WritableFile> NewS3WriteFile(std::shared_ptr<S3Client> client, S3Path path);

}  // namespace sluice::io

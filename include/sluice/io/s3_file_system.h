// The S3 file system: paths are "s3://bucket/key" URIs, a "directory" is a key prefix ending
// at '/'. Requests are signed with SigV4 (hand-written on OpenSSL: no AWS SDK is packaged in
// Debian) and run on the shared HTTP engine, so reads stay in flight without holding threads.
// docs/storage.md describes configuration, consistency and errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "sluice/io/aws_config.h"
#include "sluice/io/file_system.h"
#include "sluice/io/http_engine.h"
#include "sluice/io/retry_policy.h"

namespace sluice::io {

struct S3Options {
  AwsConfig aws;  // endpoint, region, credentials, addressing; see ResolveAwsConfig
  // Reads longer than this are split into parallel ranged GETs of this size, and writes are
  // uploaded in parts of this size (growing after every 1,000 parts so that S3's 10,000-part
  // limit allows ~440 GB). Values under 5 MiB are raised to S3's minimum part size.
  // Default: 8 MiB (AWS's guidance for ranged GETs is 8-16 MiB).
  uint64_t part_size = uint64_t{8} << 20;
  // Parts one writer uploads at once; memory per writer is about (this + 1) x part_size.
  // Default: 4.
  size_t write_parts_in_flight = 4;
  // How ReadRangesAsync merges nearby ranges into one GET. Default: CoalesceOptions::ForS3()
  // (gaps up to ~2.7 MB are read through; merged requests up to ~24 MB).
  CoalesceOptions coalesce = CoalesceOptions::ForS3();
  // Ranged GETs may be hedged (HttpEngineOptions::hedge). Default: true.
  bool hedge_reads = true;
  // Deadline of one request over all its attempts. Default: 0 = the engine's (5 minutes).
  std::chrono::milliseconds request_timeout{0};
  // Default: null = DefaultHttpEngine().
  HttpEngine* engine = nullptr;
  // Default: null = S3RetryPolicy().
  std::shared_ptr<const RetryPolicy> retry;
};

// InvalidArgument for a malformed endpoint. Missing credentials are reported by each
// operation (FailedPrecondition naming where they were looked for), not here.
Result<std::unique_ptr<FileSystem>> NewS3FileSystem(S3Options options);

// The S3 file system of the process's current AWS configuration (environment and ~/.aws),
// as FileSystemFor("s3://...") returns it. One per distinct configuration, never destroyed.
Result<FileSystem*> S3FileSystemFromEnvironment();

// RetryPolicy with S3's error documents decoded, so codes like SlowDown, RequestTimeout,
// InternalError (also inside a 200 reply to CompleteMultipartUpload) are retried.
std::shared_ptr<const RetryPolicy> S3RetryPolicy(RetryPolicy::Options options = {});

}  // namespace sluice::io

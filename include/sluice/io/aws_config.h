// AWS configuration resolved the way the AWS CLI and SDKs read it (docs/storage.md,
// "Configuration"): environment variables first, then the profile's sections in
// ~/.aws/credentials and ~/.aws/config. Resolution is pure over injected sources, so tests
// use neither the real environment nor the real home directory.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "sluice/base/status.h"

namespace sluice::io {

// Never printed: errors and logs name where credentials came from, not what they are.
struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // Default: "" (long-term keys)
};

enum class S3Addressing {
  kAuto,           // virtual-hosted for AWS endpoints when the bucket name allows it, else path
  kPath,           // https://endpoint/bucket/key
  kVirtualHosted,  // https://bucket.endpoint/key
};

struct AwsConfig {
  std::string profile = "default";  // AWS_PROFILE, else "default"
  // AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`; Default: "us-east-1".
  std::string region = "us-east-1";
  // AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `s3 = endpoint_url` (or a
  // [services] section's), the profile's `endpoint_url`. Default: "" = AWS
  // (https://s3.<region>.amazonaws.com).
  std::string endpoint_url;
  // The profile's `s3 = addressing_style` (auto, path, virtual). Default: auto.
  S3Addressing addressing = S3Addressing::kAuto;
  // AWS_NO_SIGN_REQUEST=true|yes|1: requests go unsigned (public buckets). Default: false.
  bool anonymous = false;
  // Attempts of one request, the first included, as botocore counts them: AWS_MAX_ATTEMPTS,
  // else the profile's `max_attempts`. Default: 0 = sluice's RetryPolicy default (6).
  int max_attempts = 0;
  // AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the profile's
  // aws_access_key_id / aws_secret_access_key / aws_session_token in the credentials file,
  // then the config file. nullopt: none found.
  std::optional<AwsCredentials> credentials;
  // Where the credentials came from ("environment", "/home/u/.aws/credentials [dev]"), or
  // what was searched when there are none: for messages.
  std::string credentials_source;
};

// Where resolution reads from.
struct AwsConfigSources {
  // An environment variable's value, nullopt when unset.
  std::function<std::optional<std::string>(const std::string& name)> getenv;
  // A file's text, nullopt when it does not exist or cannot be read.
  std::function<std::optional<std::string>(const std::string& path)> read_file;
};

// The process's environment and files.
AwsConfigSources ProcessAwsConfigSources();

// InvalidArgument when AWS_PROFILE names a profile found in neither file, or a value is
// malformed (an addressing style that is not auto/path/virtual).
Result<AwsConfig> ResolveAwsConfig(const AwsConfigSources& sources);

}  // namespace sluice::io

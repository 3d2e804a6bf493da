// The real S3 server of the tests: Ceph RGW started by ctest's fixture (scripts/s3-server,
// state in $SLUICE_S3_SERVER_DIR). Tests named S3Server* run only with that fixture.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "io/s3_client.h"
#include "sluice/io/s3_file_system.h"

namespace sluice::io::testing {

// Options for the fixture's server, read from its env file; nullopt without a server.
inline std::optional<S3Options> TestServerOptions() {
  const char* dir = std::getenv("SLUICE_S3_SERVER_DIR");
  if (dir == nullptr) return std::nullopt;
  std::ifstream env(std::string(dir) + "/env");
  if (!env) return std::nullopt;
  S3Options o;
  AwsCredentials keys;
  std::string line;
  while (std::getline(env, line)) {
    const std::string prefix = "export ";
    if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "AWS_ENDPOINT_URL") o.aws.endpoint_url = v;
    if (k == "AWS_ACCESS_KEY_ID") keys.access_key_id = v;
    if (k == "AWS_SECRET_ACCESS_KEY") keys.secret_access_key = v;
    if (k == "AWS_REGION") o.aws.region = v;
  }
  o.aws.credentials = keys;
  return o;
}

inline const char* kNoServer =
    "no S3 server: run through ctest, whose fixture starts scripts/s3-server and sets "
    "SLUICE_S3_SERVER_DIR";

// Creates `bucket` (fine if it exists), with a canned ACL when `acl` is not empty.
inline Status CreateBucket(const S3Options& options, const std::string& bucket,
                           const std::string& acl = "") {
  SLUICE_ASSIGN_OR_RETURN(auto client, S3Client::Make(options));
  S3Call call;
  call.method = "PUT";
  call.path = S3Path{bucket, ""};
  if (!acl.empty()) call.headers = {{"x-amz-acl", acl}};
  auto r = client->Run(call);
  if (!r.ok() && r.status().message().find("BucketAlreadyOwnedByYou") != std::string::npos) {
    return Status::OK();
  }
  return r.status();
}

// A prefix no other test (or earlier run) uses.
inline std::string UniquePrefix(const std::string& what) {
  static std::atomic<int> n{0};
  return what + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007) +
         "-" + std::to_string(n++);
}

}  // namespace sluice::io::testing

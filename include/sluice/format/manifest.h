// dataset.json: the manifest a ShardWriter leaves next to its shards (docs/manifest.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/format/example.h"
#include "sluice/format/record.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

struct ManifestShard {
  std::string path;        // relative to the manifest's directory
  uint64_t records = 0;
  uint64_t file_bytes = 0;
  std::string index;       // relative path of the .idx file, empty when none
};

struct FeatureSchema {
  FeatureType type = FeatureType::kNone;
  // Values per record: -1 when it varies, otherwise the fixed count (1 for scalars).
  int64_t values_per_record = -1;
};

struct Manifest {
  int format_version = 1;
  std::string tool;        // "sluice 0.1.0"
  Codec codec = Codec::kZstd;
  std::vector<ManifestShard> shards;
  std::map<std::string, FeatureSchema> features;
  std::map<std::string, std::string> metadata;  // free-form (e.g. "source": "images")

  uint64_t total_records() const;
  std::string ToJson() const;
  static Result<Manifest> FromJson(std::string_view json, const std::string& source);
  static constexpr const char* kFileName = "dataset.json";
  static Result<Manifest> Load(io::FileSystem* fs, const std::string& dir);
  Status Save(io::FileSystem* fs, const std::string& dir) const;
};

// Resolves a user's PATH (a shard file, a directory holding dataset.json, or a glob) to
// the list of shard files, in order.
Result<std::vector<std::string>> ResolveShards(io::FileSystem* fs, const std::string& path);

}  // namespace sluice::format

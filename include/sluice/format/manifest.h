// dataset.json: the manifest a ShardWriter leaves next to its shards (docs/manifest.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/format/example.h"
#include "sluice/format/record.h"
#include "sluice/io/file_system.h"

namespace sluice::format {

struct ManifestShard {
  std::string path;  // relative to the manifest's directory
  uint64_t records = 0;
  uint64_t file_bytes = 0;
  std::string index;  // relative path of the .idx file, empty when none
};

struct FeatureSchema {
  FeatureType type = FeatureType::kNone;
  // Values per record: -1 when it varies, otherwise the fixed count (1 for scalars).
  int64_t values_per_record = -1;
};

struct Manifest {
  int format_version = 1;
  std::string tool;  // "sluice 0.1.0"
  std::string run;   // the run that published it (dataset_publisher.h); "" if unknown
  Codec codec = Codec::kZstd;
  std::vector<ManifestShard> shards;
  std::map<std::string, FeatureSchema> features;
  std::map<std::string, std::string> metadata;  // free-form (e.g. "source": "images")

  uint64_t total_records() const;
  // The files of the dataset, relative to its directory: shards, indexes, and the files named
  // by metadata keys ending in "_file" (e.g. "classes_file").
  std::vector<std::string> Files() const;
  std::string ToJson() const;
  static Result<Manifest> FromJson(std::string_view json, const std::string& source);
  static constexpr const char* kFileName = "dataset.json";
  static Result<Manifest> Load(io::FileSystem* fs, const std::string& dir);
  Status Save(io::FileSystem* fs, const std::string& dir) const;
};

// A user's PATH resolved: the shard files to read, in order, and, for a dataset directory,
// its manifest (whose shards[i] is shards[i]).
struct ResolvedDataset {
  std::vector<std::string> shards;
  std::optional<Manifest> manifest;
  std::string manifest_path;  // "<dir>/dataset.json" when `manifest` is set
  // On remote storage, the directory's entries as resolving listed them (sizes and ETags:
  // shards open from it without a request each, io::ListedFileSystem); empty otherwise.
  std::vector<io::FileInfo> listing;
};

// Resolves a user's PATH: a shard file, a directory holding dataset.json, or a glob
// (docs/manifest.md, "Resolving a user's PATH"). A manifest's paths must stay inside its
// directory ("Path rules"); a directory without dataset.json that holds a writer's
// unpublished output is refused (FailedPrecondition), never read as a smaller dataset.
Result<ResolvedDataset> ResolveDataset(io::FileSystem* fs, const std::string& path);
// The shard files of ResolveDataset.
Result<std::vector<std::string>> ResolveShards(io::FileSystem* fs, const std::string& path);

// The checks a reader makes when it opens shard i of `dataset`, since they cost nothing
// then: the file's size, and its record count when known (from its index), against the
// manifest. DataLoss naming dataset.json, the shard and both numbers; OK without a manifest.
Status CheckShardMatchesManifest(const ResolvedDataset& dataset, size_t i, uint64_t file_bytes,
                                 std::optional<uint64_t> records);

}  // namespace sluice::format

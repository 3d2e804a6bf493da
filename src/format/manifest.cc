// dataset.json (docs/manifest.md): serialisation, validation and PATH resolution.
#include "sluice/format/manifest.h"

#include <algorithm>
#include <optional>
#include <nlohmann/json.hpp>

#include "sluice/base/utf8.h"
#include "sluice/format/dataset_publisher.h"
#include "sluice/io/listed_file_system.h"
#include "sluice/io/relative_path.h"

namespace sluice::format {
namespace {

using Json = nlohmann::ordered_json;

// The newest format_version this code understands. A newer manifest may carry meaning we
// would silently drop, so it is refused rather than half-read.
constexpr int kSupportedFormatVersion = 1;

// Field access that reports the JSON path of whatever is wrong ("shards[2].records").
class Validator {
 public:
  explicit Validator(const std::string& source) : source_(source) {}

  Status Error(const std::string& where, const std::string& problem) const {
    return DataLoss(source_ + ": " + where + ": " + problem);
  }

  Result<const Json*> Field(const Json& obj, const std::string& where, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) return Error(where.empty() ? key : where + "." + key, "missing");
    return &*it;
  }

  Result<uint64_t> Unsigned(const Json& obj, const std::string& where, const char* key) const {
    SLUICE_ASSIGN_OR_RETURN(const Json* v, Field(obj, where, key));
    if (!v->is_number_unsigned()) return Error(Join(where, key), "expected an unsigned integer");
    return v->get<uint64_t>();
  }

  Result<std::string> String(const Json& obj, const std::string& where, const char* key) const {
    SLUICE_ASSIGN_OR_RETURN(const Json* v, Field(obj, where, key));
    if (!v->is_string()) return Error(Join(where, key), "expected a string");
    return v->get<std::string>();
  }

  Result<const Json*> Typed(const Json& obj, const std::string& where, const char* key,
                            Json::value_t type, const char* expected) const {
    SLUICE_ASSIGN_OR_RETURN(const Json* v, Field(obj, where, key));
    if (v->type() != type) return Error(Join(where, key), std::string("expected ") + expected);
    return v;
  }

  static std::string Join(const std::string& where, const char* key) {
    return where.empty() ? std::string(key) : where + "." + key;
  }

 private:
  const std::string& source_;
};

// Metadata keys ending in "_file" name files of the dataset (Manifest::Files).
bool NamesFile(std::string_view key) { return key.ends_with("_file"); }

Result<FeatureType> ParseFeatureType(std::string_view name) {
  for (FeatureType t : {FeatureType::kBytes, FeatureType::kFloat, FeatureType::kInt64}) {
    if (FeatureTypeName(t) == name) return t;
  }
  return InvalidArgument("unknown feature type '" + std::string(name) +
                         "' (expected bytes, float or int64)");
}

// A stored path that breaks the path rules (io/relative_path.h) is refused with the entry
// named: "out/dataset.json: shards[3].path: '../../x': a '..' component leaves ...".
Result<std::string> RelativePath(const Validator& v, const Json& j, const std::string& where,
                                 const char* key) {
  SLUICE_ASSIGN_OR_RETURN(std::string path, v.String(j, where, key));
  Status rule = io::CheckRelativePath(path);
  if (!rule.ok()) {
    return v.Error(Validator::Join(where, key), rule.message() + " ('" + path + "')");
  }
  return path;
}

Result<ManifestShard> ParseShard(const Validator& v, const Json& j, const std::string& where) {
  if (!j.is_object()) return v.Error(where, "expected an object");
  ManifestShard shard;
  SLUICE_ASSIGN_OR_RETURN(shard.path, RelativePath(v, j, where, "path"));
  SLUICE_ASSIGN_OR_RETURN(shard.records, v.Unsigned(j, where, "records"));
  SLUICE_ASSIGN_OR_RETURN(shard.file_bytes, v.Unsigned(j, where, "file_bytes"));
  if (j.contains("index")) {
    SLUICE_ASSIGN_OR_RETURN(shard.index, RelativePath(v, j, where, "index"));
  }
  return shard;
}

Result<FeatureSchema> ParseFeature(const Validator& v, const Json& j, const std::string& where) {
  if (!j.is_object()) return v.Error(where, "expected an object");
  FeatureSchema schema;
  SLUICE_ASSIGN_OR_RETURN(std::string type, v.String(j, where, "type"));
  auto parsed = ParseFeatureType(type);
  if (!parsed.ok()) return v.Error(where + ".type", parsed.status().message());
  schema.type = *parsed;
  SLUICE_ASSIGN_OR_RETURN(const Json* count, v.Field(j, where, "values_per_record"));
  if (!count->is_number_integer() || count->get<int64_t>() < -1) {
    return v.Error(where + ".values_per_record", "expected an integer >= -1");
  }
  schema.values_per_record = count->get<int64_t>();
  return schema;
}

Status ParseBody(const Validator& v, const Json& j, Manifest* m) {
  if (!j.is_object()) return v.Error("top level", "expected a JSON object");
  SLUICE_ASSIGN_OR_RETURN(uint64_t version, v.Unsigned(j, "", "format_version"));
  if (version < 1 || version > kSupportedFormatVersion) {
    return v.Error("format_version", std::to_string(version) +
                                         " is not supported (this sluice "
                                         "reads version " +
                                         std::to_string(kSupportedFormatVersion) + ")");
  }
  m->format_version = static_cast<int>(version);
  if (j.contains("tool")) {
    SLUICE_ASSIGN_OR_RETURN(m->tool, v.String(j, "", "tool"));
  }
  if (j.contains("run")) {
    SLUICE_ASSIGN_OR_RETURN(m->run, v.String(j, "", "run"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::string codec, v.String(j, "", "codec"));
  auto parsed_codec = ParseCodec(codec);
  if (!parsed_codec.ok()) return v.Error("codec", parsed_codec.status().message());
  m->codec = *parsed_codec;

  SLUICE_ASSIGN_OR_RETURN(const Json* shards,
                          v.Typed(j, "", "shards", Json::value_t::array, "an array"));
  for (size_t i = 0; i < shards->size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(auto shard,
                            ParseShard(v, (*shards)[i], "shards[" + std::to_string(i) + "]"));
    m->shards.push_back(std::move(shard));
  }
  if (j.contains("features")) {
    SLUICE_ASSIGN_OR_RETURN(const Json* features,
                            v.Typed(j, "", "features", Json::value_t::object, "an object"));
    for (const auto& [name, f] : features->items()) {
      SLUICE_ASSIGN_OR_RETURN(m->features[name], ParseFeature(v, f, "features." + name));
    }
  }
  if (j.contains("metadata")) {
    SLUICE_ASSIGN_OR_RETURN(const Json* metadata,
                            v.Typed(j, "", "metadata", Json::value_t::object, "an object"));
    for (const auto& [key, value] : metadata->items()) {
      if (!value.is_string()) return v.Error("metadata." + key, "expected a string");
      if (NamesFile(key)) {
        SLUICE_ASSIGN_OR_RETURN(m->metadata[key],
                                RelativePath(v, *metadata, "metadata", key.c_str()));
      } else {
        m->metadata[key] = value.get<std::string>();
      }
    }
  }
  // total_records is redundant on purpose: a manifest whose shard list was edited by hand
  // (or truncated) no longer adds up, and that is worth refusing.
  SLUICE_ASSIGN_OR_RETURN(uint64_t total, v.Unsigned(j, "", "total_records"));
  if (total != m->total_records()) {
    return v.Error("total_records", std::to_string(total) + " but the shards hold " +
                                        std::to_string(m->total_records()));
  }
  return Status::OK();
}

bool HasWildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Index files and writers' temporaries ("x.tfrecord.zst.tmp-12-3") sit next to shards but
// are never shards themselves.
bool IsIndexOrTemporary(std::string_view path) {
  std::string_view base = io::Basename(path);
  return EndsWith(base, ".idx") || base.find(".tmp") != std::string_view::npos;
}

bool LooksLikeShard(std::string_view path) {
  std::string_view base = io::Basename(path);
  return base.find(".tfrecord") != std::string_view::npos && base.front() != '.' &&
         !IsIndexOrTemporary(base);
}

// The shards of a manifest, each checked against the path rules on the file system (a
// symbolic link pointing out of the directory is refused like "..").
// `listed`: the directory's listing when it was listed first (remote storage): the manifest
// opens from it (on S3 without a HEAD).
Result<ResolvedDataset> DatasetOfManifest(io::FileSystem* fs, const std::string& dir,
                                          const std::vector<io::FileInfo>& listed) {
  ResolvedDataset out;
  io::ListedFileSystem from_listing(fs, listed);
  SLUICE_ASSIGN_OR_RETURN(Manifest m, Manifest::Load(&from_listing, dir));
  out.manifest_path = io::JoinPath(dir, Manifest::kFileName);
  for (size_t i = 0; i < m.shards.size(); ++i) {
    const ManifestShard& shard = m.shards[i];
    for (const std::string* path : {&shard.path, &shard.index}) {
      if (path->empty()) continue;
      Status rule = io::CheckInsideRoot(fs, dir, *path);
      if (!rule.ok()) {
        return DataLoss(out.manifest_path + ": shards[" + std::to_string(i) + "]" +
                        (path == &shard.path ? ".path" : ".index") + ": " + rule.message() + " ('" +
                        *path + "')");
      }
    }
    out.shards.push_back(io::JoinPath(dir, shard.path));
  }
  out.manifest = std::move(m);
  return out;
}

// `listed`: the directory's entries when it was listed first (remote storage: ResolveDataset).
Result<ResolvedDataset> DatasetOfDirectory(io::FileSystem* fs, const std::string& dir,
                                           std::optional<std::vector<io::FileInfo>> listed) {
  const std::string manifest = io::JoinPath(dir, Manifest::kFileName);
  // On remote storage the listing comes first: it says whether dataset.json exists (on S3 a
  // HEAD and a listing less than Exists) and lets the manifest and the shards open without a
  // request each.
  const bool remote = listed.has_value();
  std::vector<io::FileInfo> entries = remote ? std::move(*listed) : std::vector<io::FileInfo>();
  const bool has_manifest =
      remote ? std::any_of(entries.begin(), entries.end(),
                           [&](const io::FileInfo& e) { return !e.is_directory && e.path == manifest; })
             : fs->Exists(manifest);
  if (has_manifest) {
    SLUICE_ASSIGN_OR_RETURN(ResolvedDataset out, DatasetOfManifest(fs, dir, entries));
    out.listing = std::move(entries);
    return out;
  }
  if (!remote) {
    SLUICE_ASSIGN_OR_RETURN(entries, fs->List(dir));
  }
  SLUICE_RETURN_IF_ERROR(CheckNoUnpublishedRun(fs, dir, entries));
  ResolvedDataset out;
  for (const auto& e : entries) {
    if (!e.is_directory && LooksLikeShard(e.path)) out.shards.push_back(e.path);
  }
  if (out.shards.empty()) {
    return NotFound(dir + ": no " + std::string(Manifest::kFileName) +
                    " and no *.tfrecord* files in this directory");
  }
  std::sort(out.shards.begin(), out.shards.end());
  if (remote) out.listing = std::move(entries);
  return out;
}

}  // namespace

std::vector<std::string> Manifest::Files() const {
  std::vector<std::string> files;
  for (const auto& s : shards) {
    files.push_back(s.path);
    if (!s.index.empty()) files.push_back(s.index);
  }
  for (const auto& [key, value] : metadata) {
    if (NamesFile(key)) files.push_back(value);
  }
  return files;
}

uint64_t Manifest::total_records() const {
  uint64_t total = 0;
  for (const auto& s : shards) total += s.records;
  return total;
}

std::string Manifest::ToJson() const {
  Json j;
  j["format_version"] = format_version;
  j["tool"] = tool;
  if (!run.empty()) j["run"] = run;
  j["codec"] = std::string(CodecName(codec));
  j["total_records"] = total_records();
  Json shard_list = Json::array();
  for (const auto& s : shards) {
    Json e = {{"path", s.path}, {"records", s.records}, {"file_bytes", s.file_bytes}};
    if (!s.index.empty()) e["index"] = s.index;
    shard_list.push_back(std::move(e));
  }
  j["shards"] = std::move(shard_list);
  Json feature_map = Json::object();
  for (const auto& [name, f] : features) {
    feature_map[name] = {{"type", std::string(FeatureTypeName(f.type))},
                         {"values_per_record", f.values_per_record}};
  }
  j["features"] = std::move(feature_map);
  Json meta = Json::object();
  for (const auto& [key, value] : metadata) meta[key] = value;
  j["metadata"] = std::move(meta);
  return j.dump(2) + "\n";
}

Result<Manifest> Manifest::FromJson(std::string_view json, const std::string& source) {
  Json j;
  try {
    j = Json::parse(json);
  } catch (const Json::parse_error& e) {
    return DataLoss(source + ": offset " + std::to_string(e.byte) + ": invalid JSON (" +
                    EscapeBytes(e.what(), 300) + ")");
  }
  Manifest m;
  Validator v(source);
  SLUICE_RETURN_IF_ERROR(ParseBody(v, j, &m));
  return m;
}

Result<Manifest> Manifest::Load(io::FileSystem* fs, const std::string& dir) {
  std::string path = io::JoinPath(dir, kFileName);
  SLUICE_ASSIGN_OR_RETURN(std::string text, fs->ReadAll(path));
  return FromJson(text, path);
}

Status Manifest::Save(io::FileSystem* fs, const std::string& dir) const {
  return fs->WriteAll(io::JoinPath(dir, kFileName), ToJson());
}

Result<ResolvedDataset> ResolveDataset(io::FileSystem* fs, const std::string& path) {
  ResolvedDataset out;
  if (HasWildcard(path)) {
    SLUICE_ASSIGN_OR_RETURN(auto matches, fs->Glob(path));
    for (auto& m : matches) {
      if (!IsIndexOrTemporary(m)) out.shards.push_back(std::move(m));
    }
    if (out.shards.empty()) return NotFound(path + ": the pattern matches no shard files");
    return out;  // Glob() sorts
  }
  // A directory's listing says it is one: on S3, Stat of a prefix is a HEAD and a listing,
  // and the directory was listed again after it. An empty listing, or one that is not of
  // entries inside `path` (WebHDFS lists a file as itself), leaves it to Stat.
  std::optional<std::vector<io::FileInfo>> listed;
  if (fs->is_remote()) {
    const std::string inside = io::JoinPath(path, "");
    Result<std::vector<io::FileInfo>> entries = fs->List(path);
    if (entries.ok() &&
        std::all_of(entries->begin(), entries->end(), [&](const io::FileInfo& e) {
          return e.path.size() > inside.size() && e.path.compare(0, inside.size(), inside) == 0;
        })) {
      if (!entries->empty()) return DatasetOfDirectory(fs, path, std::move(*entries));
      listed.emplace();  // an empty directory, if Stat says it is one
    }
  }
  auto info = fs->Stat(path);
  if (!info.ok()) {
    if (info.status().code() == StatusCode::kNotFound) {
      return NotFound(path + ": no such shard file, directory or pattern");
    }
    return info.status();
  }
  if (info->is_directory) {
    if (fs->is_remote() && !listed.has_value()) {
      SLUICE_ASSIGN_OR_RETURN(listed, fs->List(path));
    }
    return DatasetOfDirectory(fs, path, std::move(listed));
  }
  out.shards.push_back(path);
  return out;
}

Result<std::vector<std::string>> ResolveShards(io::FileSystem* fs, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(ResolvedDataset dataset, ResolveDataset(fs, path));
  return std::move(dataset.shards);
}

Status CheckShardMatchesManifest(const ResolvedDataset& dataset, size_t i, uint64_t file_bytes,
                                 std::optional<uint64_t> records) {
  if (!dataset.manifest || i >= dataset.manifest->shards.size()) return Status::OK();
  const ManifestShard& entry = dataset.manifest->shards[i];
  auto mismatch = [&](const char* what, uint64_t listed, uint64_t found) {
    return DataLoss(dataset.manifest_path + ": shards[" + std::to_string(i) + "] " + entry.path +
                    ": the manifest says " + std::to_string(listed) + " " + what + ", the shard " +
                    (what[0] == 'b' ? "file has " : "holds ") + std::to_string(found) +
                    " (a shard replaced, truncated or damaged after publication; `sluice "
                    "verify` checks every record)");
  };
  if (file_bytes != entry.file_bytes) return mismatch("bytes", entry.file_bytes, file_bytes);
  if (records && *records != entry.records) return mismatch("records", entry.records, *records);
  return Status::OK();
}

}  // namespace sluice::format

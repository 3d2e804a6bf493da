#include "sluice/format/manifest.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::format {
namespace {

Manifest TwoShardManifest() {
  Manifest m;
  m.tool = "sluice test";
  m.codec = Codec::kZstd;
  m.shards = {
      {"data-00000-of-00002.tfrecord.zst", 10, 1234, "data-00000-of-00002.tfrecord.zst.idx"},
      {"data-00001-of-00002.tfrecord.zst", 5, 600, ""}};
  m.features["image/encoded"] = {FeatureType::kBytes, 1};
  m.features["tokens"] = {FeatureType::kInt64, -1};
  m.features["score"] = {FeatureType::kFloat, 1};
  m.metadata["source"] = "images";
  return m;
}

// A valid manifest as text, with `field` replaced by `replacement` (a JSON fragment).
std::string ManifestWith(const std::string& field, const std::string& replacement) {
  std::string json = TwoShardManifest().ToJson();
  size_t at = json.find(field);
  EXPECT_NE(at, std::string::npos) << field;
  size_t end = json.find_first_of(",\n", at);
  return json.substr(0, at) + replacement + json.substr(end);
}

void ExpectDataLoss(const std::string& json, const std::string& expected_part) {
  auto m = Manifest::FromJson(json, "out/dataset.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().ToString();
  EXPECT_NE(m.status().message().find("out/dataset.json"), std::string::npos)
      << m.status().ToString();
  EXPECT_NE(m.status().message().find(expected_part), std::string::npos) << m.status().ToString();
}

TEST(ManifestTest, RoundTrip) {
  Manifest m = TwoShardManifest();
  auto back = Manifest::FromJson(m.ToJson(), "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->format_version, 1);
  EXPECT_EQ(back->tool, "sluice test");
  EXPECT_EQ(back->codec, Codec::kZstd);
  ASSERT_EQ(back->shards.size(), 2u);
  EXPECT_EQ(back->shards[0].path, m.shards[0].path);
  EXPECT_EQ(back->shards[0].records, 10u);
  EXPECT_EQ(back->shards[0].file_bytes, 1234u);
  EXPECT_EQ(back->shards[0].index, m.shards[0].index);
  EXPECT_EQ(back->shards[1].index, "");
  EXPECT_EQ(back->total_records(), 15u);
  ASSERT_EQ(back->features.size(), 3u);
  EXPECT_EQ(back->features["tokens"].type, FeatureType::kInt64);
  EXPECT_EQ(back->features["tokens"].values_per_record, -1);
  EXPECT_EQ(back->features["score"].type, FeatureType::kFloat);
  EXPECT_EQ(back->metadata["source"], "images");
  EXPECT_EQ(back->ToJson(), m.ToJson());
}

TEST(ManifestTest, TotalRecordsIsWritten) {
  EXPECT_NE(TwoShardManifest().ToJson().find("\"total_records\": 15"), std::string::npos);
}

TEST(ManifestTest, InvalidJsonNamesFileAndOffset) {
  ExpectDataLoss("{\"format_version\": 1,,}", "offset 22");
}

TEST(ManifestTest, TopLevelNotAnObject) { ExpectDataLoss("[1, 2]", "expected a JSON object"); }

TEST(ManifestTest, MissingShardFieldNamesItsPath) {
  std::string json = TwoShardManifest().ToJson();
  size_t at = json.find("\"records\": 5");
  json.replace(at, std::string("\"records\": 5,").size(), "");
  ExpectDataLoss(json, "shards[1].records: missing");
}

TEST(ManifestTest, WrongTypeNamesTheField) {
  ExpectDataLoss(ManifestWith("\"file_bytes\": 1234", "\"file_bytes\": \"big\""),
                 "shards[0].file_bytes: expected an unsigned integer");
}

TEST(ManifestTest, NegativeCountRefused) {
  ExpectDataLoss(ManifestWith("\"records\": 10", "\"records\": -10"),
                 "shards[0].records: expected an unsigned integer");
}

TEST(ManifestTest, TotalRecordsMismatch) {
  ExpectDataLoss(ManifestWith("\"total_records\": 15", "\"total_records\": 16"),
                 "total_records: 16 but the shards hold 15");
}

TEST(ManifestTest, NewerFormatVersionRefused) {
  ExpectDataLoss(ManifestWith("\"format_version\": 1", "\"format_version\": 2"),
                 "format_version: 2 is not supported");
}

TEST(ManifestTest, UnknownCodec) {
  ExpectDataLoss(ManifestWith("\"codec\": \"zstd\"", "\"codec\": \"lz4\""), "codec:");
}

TEST(ManifestTest, UnknownFeatureType) {
  ExpectDataLoss(ManifestWith("\"type\": \"int64\"", "\"type\": \"string\""),
                 "features.tokens.type: unknown feature type 'string'");
}

TEST(ManifestTest, EmptyShardPath) {
  ExpectDataLoss(ManifestWith("\"path\": \"data-00001", "\"path\": \"\""), "shards[1].path: empty");
}

TEST(ManifestTest, MetadataValueMustBeString) {
  ExpectDataLoss(ManifestWith("\"source\": \"images\"", "\"source\": 3"),
                 "metadata.source: expected a string");
}

TEST(ManifestTest, SaveAndLoadThroughFileSystem) {
  auto fs = io::NewMemoryFileSystem();
  ASSERT_TRUE(fs->CreateDirs("/ds").ok());
  ASSERT_TRUE(TwoShardManifest().Save(fs.get(), "/ds").ok());
  auto back = Manifest::Load(fs.get(), "/ds");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->total_records(), 15u);
}

TEST(ManifestTest, LoadMissingIsNotFound) {
  auto fs = io::NewMemoryFileSystem();
  auto m = Manifest::Load(fs.get(), "/nowhere");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

// Path rules (docs/manifest.md): a manifest cannot name files outside its directory.
TEST(ManifestTest, ShardPathLeavingTheDirectoryIsRefused) {
  ExpectDataLoss(ManifestWith("\"path\": \"data-00001", "\"path\": \"../../other/x.tfrecord\""),
                 "shards[1].path: a '..' component leaves the dataset directory "
                 "('../../other/x.tfrecord')");
  ExpectDataLoss(ManifestWith("\"path\": \"data-00001", "\"path\": \"a/../../x.tfrecord\""),
                 "shards[1].path: a '..' component");
}

TEST(ManifestTest, AbsoluteShardPathIsRefused) {
  ExpectDataLoss(ManifestWith("\"path\": \"data-00001", "\"path\": \"/etc/passwd\""),
                 "shards[1].path: absolute path");
}

TEST(ManifestTest, UriOrDotShardPathIsRefused) {
  ExpectDataLoss(ManifestWith("\"path\": \"data-00001", "\"path\": \"s3://bucket/x\""),
                 "shards[1].path: a URI");
  ExpectDataLoss(ManifestWith("\"path\": \"data-00001", "\"path\": \"./x.tfrecord\""),
                 "shards[1].path: an empty or '.' component");
}

TEST(ManifestTest, IndexPathLeavingTheDirectoryIsRefused) {
  ExpectDataLoss(ManifestWith("\"index\"", "\"index\": \"../x.idx\""),
                 "shards[0].index: a '..' component");
}

TEST(ManifestTest, MetadataFileLeavingTheDirectoryIsRefused) {
  ExpectDataLoss(ManifestWith("\"source\": \"images\"", "\"classes_file\": \"../classes.txt\""),
                 "metadata.classes_file: a '..' component");
}

TEST(ManifestTest, RunAndFilesRoundTrip) {
  Manifest m = TwoShardManifest();
  m.run = "0123456789ab";
  m.metadata["classes_file"] = "classes-0123456789ab.txt";
  auto back = Manifest::FromJson(m.ToJson(), "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->run, "0123456789ab");
  EXPECT_EQ(back->Files(),
            (std::vector<std::string>{
                "data-00000-of-00002.tfrecord.zst", "data-00000-of-00002.tfrecord.zst.idx",
                "data-00001-of-00002.tfrecord.zst", "classes-0123456789ab.txt"}));
}

}  // namespace
}  // namespace sluice::format

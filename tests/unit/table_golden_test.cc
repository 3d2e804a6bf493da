// Golden tables (tests/data/table/golden/, listed in its README.md): each a Delta table plus
// expected.json. One helper runs them all; GOLDEN_TABLE_EXPECTED_FAILURE marks valid tables
// sluice cannot read (and asserts that it still cannot, naming why), GOLDEN_TABLE_SKIP marks
// tables that cannot be produced here, with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sluice/table/table.h"

namespace sluice::table {
namespace {

using Json = nlohmann::json;

std::filesystem::path GoldenDir() {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  std::filesystem::path tests = root != nullptr
                                    ? std::filesystem::path(root) / "tests"
                                    : std::filesystem::path(__FILE__).parent_path().parent_path();
  return tests / "data" / "table" / "golden";
}

std::set<std::string>& Registered() {
  static std::set<std::string> names;
  return names;
}

struct Register {
  explicit Register(const char* name) { Registered().insert(name); }
};

std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Strings(const Json& j) { return j.get<std::vector<std::string>>(); }

void CheckFiles(const Table& t, const Json& expected, const std::string& what) {
  std::vector<std::string> paths;
  for (const DataFile& f : t.files()) paths.push_back(f.path);
  if (expected.contains("files")) {
    EXPECT_EQ(paths, Strings(expected["files"])) << what;
  }
  if (expected.contains("records")) {
    EXPECT_EQ(t.num_records(),
              expected["records"].is_null() ? -1 : expected["records"].get<int64_t>())
        << what;
  }
}

void CheckLatest(const Table& t, const Json& e) {
  EXPECT_EQ(t.version(), e["version"].get<int64_t>());
  CheckFiles(t, e, "latest");
  if (e.contains("protocol")) {
    EXPECT_EQ(t.protocol().min_reader_version, e["protocol"][0].get<int>());
    EXPECT_EQ(t.protocol().min_writer_version, e["protocol"][1].get<int>());
  }
  if (e.contains("partition_columns")) {
    EXPECT_EQ(t.metadata().partition_columns, Strings(e["partition_columns"]));
  }
  if (e.contains("decoded")) {
    std::vector<std::string> decoded;
    for (const DataFile& f : t.files()) {
      auto path = t.FilePath(f);
      ASSERT_TRUE(path.ok()) << path.status().ToString();
      decoded.push_back(path->substr(t.root().size() + 1));
    }
    EXPECT_EQ(decoded, Strings(e["decoded"]));
  }
  if (e.contains("timestamps")) {
    auto history = t.History();
    ASSERT_TRUE(history.ok());
    std::vector<int64_t> times;
    for (auto it = history->rbegin(); it != history->rend(); ++it)
      times.push_back(it->timestamp_ms);
    EXPECT_EQ(times, e["timestamps"].get<std::vector<int64_t>>());
  }
  if (e.contains("txns")) {
    for (const auto& [app, version] : e["txns"].items()) {
      EXPECT_EQ(t.txn_version(app), version.get<int64_t>()) << app;
    }
  }
}

void ExpectError(const Status& s, const Json& error) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(StatusCodeName(s.code()), error["code"].get<std::string>()) << s.ToString();
  for (const std::string& part : Strings(error["contains"])) {
    EXPECT_NE(s.message().find(part), std::string::npos) << s.ToString() << " lacks " << part;
  }
}

OpenOptions AtVersion(int64_t v) {
  OpenOptions o;
  o.version = v;
  return o;
}

enum class Golden { kPass, kExpectedFailure };

void RunGolden(const std::string& name, Golden mode, const std::string& reason) {
  const std::filesystem::path dir = GoldenDir() / name;
  const std::string root = (dir / "table").string();
  ASSERT_TRUE(std::filesystem::exists(dir / "expected.json")) << dir;
  Json e = Json::parse(ReadText(dir / "expected.json"));
  io::FileSystem* fs = io::LocalFileSystem();
  Result<Table> latest = Table::Open(fs, root);
  if (mode == Golden::kExpectedFailure) {
    ASSERT_FALSE(latest.ok()) << name << " now opens: turn it into a GOLDEN_TABLE";
    EXPECT_NE(latest.status().message().find(reason), std::string::npos)
        << latest.status().ToString();
    return;
  }
  if (e.contains("error")) {
    ExpectError(latest.status(), e["error"]);
  } else {
    ASSERT_TRUE(latest.ok()) << latest.status().ToString();
    CheckLatest(*latest, e["latest"]);
  }
  // Each section held in a local: a range-for over a temporary's items() would dangle.
  const Json versions = e.value("versions", Json::object());
  for (const auto& [version, want] : versions.items()) {
    auto t = Table::Open(fs, root, AtVersion(std::stoll(version)));
    ASSERT_TRUE(t.ok()) << "version " << version << ": " << t.status().ToString();
    CheckFiles(*t, want, "version " + version);
  }
  const Json version_errors = e.value("version_errors", Json::object());
  for (const auto& [version, part] : version_errors.items()) {
    auto t = Table::Open(fs, root, AtVersion(std::stoll(version)));
    ASSERT_FALSE(t.ok()) << "version " << version;
    EXPECT_NE(t.status().message().find(part.get<std::string>()), std::string::npos)
        << t.status().ToString();
  }
  if (e.contains("history")) {
    std::vector<std::string> ops;
    Result<std::vector<HistoryEntry>> history = latest->History();
    ASSERT_TRUE(history.ok()) << history.status().ToString();
    for (const HistoryEntry& h : *history) ops.push_back(h.operation);
    EXPECT_EQ(ops, Strings(e["history"]));
  }
  if (e.contains("unsafe_paths")) {
    std::vector<std::string> refused;
    for (const DataFile& f : latest->files()) {
      auto path = latest->FilePath(f);
      if (!path.ok()) {
        EXPECT_EQ(path.status().code(), StatusCode::kInvalidArgument);
        refused.push_back(f.path);
      }
    }
    EXPECT_EQ(refused, Strings(e["unsafe_paths"]));
  }
  const Json at_timestamp = e.value("at_timestamp", Json::object());
  for (const auto& [ts, version] : at_timestamp.items()) {
    OpenOptions o;
    o.timestamp_ms = std::stoll(ts);
    auto t = Table::Open(fs, root, o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->version(), version.get<int64_t>()) << ts;
  }
}

#define GOLDEN_TABLE(name)                \
  const Register kRegister_##name(#name); \
  TEST(TableGolden, name) { RunGolden(#name, Golden::kPass, ""); }
#define GOLDEN_TABLE_EXPECTED_FAILURE(name, reason) \
  const Register kRegister_##name(#name);           \
  TEST(TableGolden, name) { RunGolden(#name, Golden::kExpectedFailure, reason); }
#define GOLDEN_TABLE_SKIP(name, reason)   \
  const Register kRegister_##name(#name); \
  TEST(TableGolden, name) { GTEST_SKIP() << reason; }

// Written the way Spark and delta-rs write (hand-made from the protocol: see the README).
GOLDEN_TABLE(spark_writes)
GOLDEN_TABLE(spark_partitioned)
GOLDEN_TABLE(delta_rs_writes)
GOLDEN_TABLE(in_commit_timestamps)
// Checkpoints.
GOLDEN_TABLE(v2_checkpoint_json)
GOLDEN_TABLE(parquet_checkpoint_all_commits)
GOLDEN_TABLE(sidecar_checkpoint_all_commits)
GOLDEN_TABLE_EXPECTED_FAILURE(parquet_checkpoint_only, "Parquet checkpoint")
GOLDEN_TABLE_EXPECTED_FAILURE(sidecar_checkpoint_only, "Parquet")
// Protocol versions and features.
GOLDEN_TABLE(writer_version_4)
GOLDEN_TABLE(reader_version_4)
GOLDEN_TABLE(unknown_reader_feature)
GOLDEN_TABLE_EXPECTED_FAILURE(deletion_vectors, "deletionVectors")
GOLDEN_TABLE_EXPECTED_FAILURE(column_mapping, "column mapping")
// Damage and oddities.
GOLDEN_TABLE(version_gap)
GOLDEN_TABLE(missing_protocol)
GOLDEN_TABLE(missing_metadata)
GOLDEN_TABLE(two_metadata)
GOLDEN_TABLE(truncated_commit)
GOLDEN_TABLE(corrupt_commit)
GOLDEN_TABLE(non_commit_files)
GOLDEN_TABLE(unsafe_paths)
// Tables only the real engines can produce.
GOLDEN_TABLE_SKIP(written_by_spark,
                  "no JVM here: Spark cannot run, so the spark_* tables are "
                  "hand-made from PROTOCOL.md")
GOLDEN_TABLE_SKIP(written_by_delta_rs,
                  "no PyPI here: delta-rs cannot be installed, so the "
                  "delta_rs_* tables are hand-made from PROTOCOL.md")

TEST(TableGolden, WriterVersion4TableIsNotWritable) {
  std::string root = (GoldenDir() / "writer_version_4" / "table").string();
  auto r = Table::Append(io::LocalFileSystem(), root, {});
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().ToString();
}

TEST(TableGolden, EveryGoldenTableHasATestAndIsInTheReadme) {
  const std::string readme = ReadText(GoldenDir().parent_path() / "README.md");
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir())) {
    std::string name = entry.path().filename().string();
    EXPECT_TRUE(Registered().count(name)) << name << " has no GOLDEN_TABLE line";
  }
  for (const std::string& name : Registered()) {
    EXPECT_NE(readme.find("`" + name + "`"), std::string::npos) << name << " not in README.md";
  }
}

}  // namespace
}  // namespace sluice::table

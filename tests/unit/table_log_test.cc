// The pure pieces of the table log: file names, action parsing, log segments, replay rules,
// commit timestamps, checkpoints, predicates, data paths. No storage involved.
#include <gtest/gtest.h>

#include "sluice/table/predicate.h"
#include "sluice/table/table.h"
#include "sluice/table/timestamp.h"
#include "table/checkpoint.h"
#include "table/log_path.h"
#include "table/log_segment.h"
#include "table/table_state.h"

namespace sluice::table {
namespace {

TEST(TableLogPath, ParsesEveryKindOfLogFile) {
  EXPECT_EQ(ParseLogPath("00000000000000000012.json").kind, LogFileKind::kCommit);
  EXPECT_EQ(ParseLogPath("00000000000000000012.json").version, 12);
  EXPECT_EQ(ParseLogPath("00000000000000000012.crc").kind, LogFileKind::kChecksum);
  EXPECT_EQ(ParseLogPath("00000000000000000010.checkpoint.parquet").kind,
            LogFileKind::kClassicCheckpoint);
  LogPath multi = ParseLogPath("00000000000000000010.checkpoint.0000000002.0000000003.parquet");
  EXPECT_EQ(multi.kind, LogFileKind::kMultiPartCheckpoint);
  EXPECT_EQ(multi.part, 2);
  EXPECT_EQ(multi.parts, 3);
  LogPath uuid =
      ParseLogPath("00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json");
  EXPECT_EQ(uuid.kind, LogFileKind::kUuidCheckpoint);
  EXPECT_TRUE(uuid.json);
  EXPECT_EQ(uuid.version, 10);
  LogPath compacted = ParseLogPath("00000000000000000004.00000000000000000006.compacted.json");
  EXPECT_EQ(compacted.kind, LogFileKind::kCompaction);
  EXPECT_EQ(compacted.end_version, 6);
  EXPECT_EQ(ParseLogPath("_last_checkpoint").kind, LogFileKind::kLastCheckpoint);
}

TEST(TableLogPath, NonCommitFilesAreOther) {
  for (const char* name :
       {"00000000000000000001.json.put.tmp-123-0", ".00000000000000000001.json.crc",
        "0000000000000000001.json", "000000000000000000001.json", "00000000000000000001.JSON",
        "00000000000000000001.json~", "_staged_commits", "abc.json",
        "00000000000000000010.checkpoint.not-a-uuid.json",
        "00000000000000000006.00000000000000000004.compacted.json"}) {
    EXPECT_EQ(ParseLogPath(name).kind, LogFileKind::kOther) << name;
  }
  EXPECT_EQ(CommitFileName(7), "00000000000000000007.json");
}

TEST(TableActions, ParsesSparkStyleCommit) {
  const std::string text =
      R"({"commitInfo":{"timestamp":1700000000000,"operation":"WRITE","operationParameters":{"mode":"Append","partitionBy":"[]"},"isBlindAppend":true}})"
      "\n"
      R"({"protocol":{"minReaderVersion":1,"minWriterVersion":2}})"
      "\n"
      R"({"metaData":{"id":"af23c9d7-fff1-4a5a-a2c8-55c59bd782aa","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":["date"],"configuration":{"delta.appendOnly":"true"},"createdTime":1}})"
      "\n"
      R"({"add":{"path":"date=2017-12-10/part-000.parquet","partitionValues":{"date":"2017-12-10"},"size":841454,"modificationTime":1512909768000,"dataChange":true,"stats":"{\"numRecords\":17,\"minValues\":{}}","tags":{"k":"v"},"futureField":[1,2]}})"
      "\n"
      R"({"cdc":{"path":"_change_data/x.parquet","partitionValues":{},"size":1,"dataChange":false}})"
      "\n";
  auto parsed = ParseActions(text, "t/_delta_log/00000000000000000000.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->actions.size(), 4u);
  EXPECT_EQ(parsed->ignored, 1);
  const auto& info = std::get<CommitInfo>(parsed->actions[0]);
  EXPECT_EQ(info.timestamp, 1700000000000);
  EXPECT_EQ(info.operation_parameters.at("mode"), "Append");
  const auto& meta = std::get<Metadata>(parsed->actions[2]);
  EXPECT_EQ(meta.partition_columns, std::vector<std::string>{"date"});
  EXPECT_EQ(meta.format_provider, "parquet");
  const auto& add = std::get<AddFile>(parsed->actions[3]);
  EXPECT_EQ(add.size, 841454);
  EXPECT_EQ(add.num_records(), 17);
  EXPECT_EQ(add.partition_values.at("date"), "2017-12-10");
}

TEST(TableActions, RoundTripsThroughJson) {
  AddFile add;
  add.path = "source=a%20b/part-1.tfrecord.zst";
  add.partition_values = {{"source", "a b"}, {"lang", std::nullopt}};
  add.size = 10;
  add.modification_time = 5;
  add.stats = RecordCountStats(3);
  add.tags = {{"sluice.index", "x.idx"}};
  RemoveFile remove;
  remove.path = "old";
  remove.deletion_timestamp = 9;
  remove.data_change = false;
  remove.extended_file_metadata = true;
  remove.size = 4;
  Protocol protocol = ProtocolWithV2Checkpoints(Protocol{});
  std::vector<Action> actions = {protocol, add, remove, Txn{"job", 4, 8}};
  auto parsed = ParseActions(SerializeActions(actions), "x");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->actions.size(), actions.size());
  EXPECT_EQ(std::get<Protocol>(parsed->actions[0]), protocol);
  EXPECT_EQ(std::get<AddFile>(parsed->actions[1]), add);
  EXPECT_EQ(std::get<RemoveFile>(parsed->actions[2]), remove);
  EXPECT_EQ(std::get<Txn>(parsed->actions[3]), (Txn{"job", 4, 8}));
}

void ExpectDataLossNaming(const std::string& text, const std::string& part) {
  auto parsed = ParseActions(text, "t/_delta_log/00000000000000000003.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(parsed.status().message().find("00000000000000000003.json"), std::string::npos)
      << parsed.status().ToString();
  EXPECT_NE(parsed.status().message().find(part), std::string::npos) << parsed.status().ToString();
}

TEST(TableActions, TruncatedLineIsDataLossNamingFileAndLine) {
  ExpectDataLossNaming("{\"txn\":{\"appId\":\"a\",\"version\":1}}\n{\"add\":{\"path\":\"x\",\"si",
                       "line 2");
}

TEST(TableActions, CorruptBytesAreDataLoss) {
  ExpectDataLossNaming(std::string("\x00\xff\x13garbage", 10), "not a JSON object");
}

TEST(TableActions, MissingRequiredFieldIsDataLoss) {
  ExpectDataLossNaming(
      R"({"add":{"path":"x","partitionValues":{},"modificationTime":1,"dataChange":true}})",
      "size: missing");
  ExpectDataLossNaming(R"({"protocol":{"minReaderVersion":1}})", "minWriterVersion");
  ExpectDataLossNaming(R"({"add":1})", "expected an object");
}

std::vector<LogEntry> Listing(std::initializer_list<const char*> names) {
  std::vector<LogEntry> out;
  for (const char* n : names) out.push_back(LogEntry{ParseLogPath(n), 0});
  std::sort(out.begin(), out.end(),
            [](const LogEntry& a, const LogEntry& b) { return a.path.name < b.path.name; });
  return out;
}

constexpr const char* kCp2 =
    "00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json";

TEST(TableLogSegment, UsesNewestJsonCheckpointAtOrBelowVersion) {
  auto listing = Listing({"00000000000000000000.json", "00000000000000000001.json",
                          "00000000000000000002.json", kCp2, "00000000000000000003.json",
                          "00000000000000000004.json", "00000000000000000003.crc"});
  auto latest = BuildLogSegment(listing, std::nullopt, "t/_delta_log");
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ(latest->version, 4);
  ASSERT_TRUE(latest->checkpoint.has_value());
  EXPECT_EQ(latest->checkpoint->path.version, 2);
  ASSERT_EQ(latest->commits.size(), 2u);
  EXPECT_EQ(latest->commits[0].path.version, 3);
  auto v1 = BuildLogSegment(listing, 1, "t/_delta_log");
  ASSERT_TRUE(v1.ok());
  EXPECT_FALSE(v1->checkpoint.has_value());
  EXPECT_EQ(v1->commits.size(), 2u);
  auto skipping = BuildLogSegment(listing, std::nullopt, "t/_delta_log", {kCp2});
  ASSERT_TRUE(skipping.ok());
  EXPECT_FALSE(skipping->checkpoint.has_value());
  EXPECT_EQ(skipping->commits.size(), 5u);
}

TEST(TableLogSegment, VersionGapIsDataLossNamingTheMissingCommit) {
  auto seg = BuildLogSegment(Listing({"00000000000000000000.json", "00000000000000000001.json",
                                      "00000000000000000003.json"}),
                             std::nullopt, "t/_delta_log");
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(seg.status().message().find("00000000000000000002.json is missing"), std::string::npos)
      << seg.status().ToString();
  // Before the gap the table is readable.
  EXPECT_TRUE(BuildLogSegment(Listing({"00000000000000000000.json", "00000000000000000001.json",
                                       "00000000000000000003.json"}),
                              1, "t/_delta_log")
                  .ok());
}

TEST(TableLogSegment, ParquetCheckpointOnlyIsUnimplementedAndSaysWhy) {
  auto seg = BuildLogSegment(Listing({"00000000000000000010.checkpoint.parquet",
                                      "00000000000000000010.json", "00000000000000000011.json"}),
                             std::nullopt, "t/_delta_log");
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(seg.status().message().find("Parquet"), std::string::npos);
  // With every commit still there, the Parquet checkpoint is simply not used.
  auto full = BuildLogSegment(
      Listing({"00000000000000000000.json", "00000000000000000001.json",
               "00000000000000000001.checkpoint.parquet", "00000000000000000002.json"}),
      std::nullopt, "t/_delta_log");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->commits.size(), 3u);
}

TEST(TableLogSegment, EmptyLogAndFutureVersionAreNotFound) {
  EXPECT_EQ(BuildLogSegment(Listing({"_last_checkpoint"}), std::nullopt, "t").status().code(),
            StatusCode::kNotFound);
  auto future = BuildLogSegment(Listing({"00000000000000000000.json"}), 5, "t");
  EXPECT_EQ(future.status().code(), StatusCode::kNotFound);
  EXPECT_NE(future.status().message().find("latest is 0"), std::string::npos);
}

ParsedLogFile Parse(const std::vector<Action>& actions) {
  return *ParseActions(SerializeActions(actions), "x");
}

Metadata SomeMetadata() {
  Metadata m;
  m.id = "id";
  return m;
}

AddFile Add(const std::string& path) {
  AddFile a;
  a.path = path;
  a.size = 1;
  return a;
}

TEST(TableReplay, LatestProtocolAndMetadataWinAndFilesAreKeyedByPath) {
  TableState s;
  ASSERT_TRUE(
      ApplyCommit(&s, 0, Parse({Protocol{}, SomeMetadata(), Add("a"), Add("b")}), 0, "0").ok());
  Metadata m2 = SomeMetadata();
  m2.name = "renamed";
  RemoveFile ra;
  ra.path = "a";
  AddFile b2 = Add("b");
  b2.size = 7;  // re-adding a path replaces its entry
  ASSERT_TRUE(ApplyCommit(&s, 1, Parse({m2, ra, b2, Txn{"app", 3, std::nullopt}}), 0, "1").ok());
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(s.metadata->name, "renamed");
  EXPECT_EQ(s.files.size(), 1u);
  EXPECT_EQ(s.files.at("b").size, 7);
  EXPECT_EQ(s.tombstones.count("a"), 1u);
  EXPECT_EQ(s.txns.at("app").version, 3);
  // A later add of a removed path revives it and clears the tombstone (invariant 3).
  ASSERT_TRUE(ApplyCommit(&s, 2, Parse({Add("a")}), 0, "2").ok());
  EXPECT_EQ(s.files.count("a"), 1u);
  EXPECT_EQ(s.tombstones.count("a"), 0u);
}

TEST(TableReplay, FirstVersionWithoutProtocolOrMetadataIsDataLoss) {
  TableState s;
  Status no_protocol = ApplyCommit(&s, 0, Parse({SomeMetadata()}), 0, "t/00.json");
  EXPECT_EQ(no_protocol.code(), StatusCode::kDataLoss);
  EXPECT_NE(no_protocol.message().find("no protocol"), std::string::npos);
  TableState s2;
  Status no_metadata = ApplyCommit(&s2, 0, Parse({Protocol{}}), 0, "t/00.json");
  EXPECT_NE(no_metadata.message().find("no metaData"), std::string::npos);
}

TEST(TableReplay, TwoMetadataActionsInOneCommitAreDataLoss) {
  TableState s;
  Status st = ApplyCommit(&s, 0, Parse({Protocol{}, SomeMetadata(), SomeMetadata()}), 0, "f");
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
}

TEST(TableReplay, SluiceCommitTruncatedAtALineBoundaryIsDataLoss) {
  CommitInfo info;
  info.operation = "WRITE";
  info.sluice_actions = 3;  // announces 3 actions; only 2 follow
  TableState s;
  Status st = ApplyCommit(&s, 0, Parse({info, Protocol{}, SomeMetadata()}), 0, "t/0.json");
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("truncated commit"), std::string::npos) << st.ToString();
}

TEST(TableReplay, CommitTimestampsAreMonotonizedAsSparkDoes) {
  CommitInfo early;
  early.timestamp = 1000;
  EXPECT_EQ(CommitTimestamp(early, 5, 0), 1000);
  EXPECT_EQ(CommitTimestamp(early, 5, 2000), 2001);  // never earlier than the previous commit
  CommitInfo ict;
  ict.timestamp = 1;
  ict.in_commit_timestamp = 3000;
  EXPECT_EQ(CommitTimestamp(ict, 5, 2000), 3000);              // inCommitTimestamp wins
  EXPECT_EQ(CommitTimestamp(std::nullopt, 4000, 2000), 4000);  // else the file time
}

TEST(TableCheckpoint, ReplaysToTheSameStateAndDropsExpiredTombstones) {
  TableState s;
  ASSERT_TRUE(
      ApplyCommit(&s, 0, Parse({Protocol{}, SomeMetadata(), Add("a"), Add("b")}), 0, "0").ok());
  RemoveFile old_remove, new_remove;
  old_remove.path = "a";
  old_remove.deletion_timestamp = 100;
  new_remove.path = "b";
  new_remove.deletion_timestamp = 900;
  ASSERT_TRUE(
      ApplyCommit(&s, 1, Parse({old_remove, new_remove, Add("c"), Txn{"j", 1, {}}}), 0, "1").ok());
  s.protocol = ProtocolWithV2Checkpoints(*s.protocol);
  CheckpointContent cp = BuildCheckpoint(s, /*tombstone_cutoff_ms=*/500);
  EXPECT_EQ(cp.adds, 1);
  TableState r;
  ASSERT_TRUE(ApplyCheckpoint(&r, 1, *ParseActions(cp.text, "cp"), "cp").ok());
  EXPECT_EQ(r.version, 1);
  EXPECT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files.count("c"), 1u);
  EXPECT_EQ(r.tombstones.count("b"), 1u);  // removed at 900 >= cutoff: kept for vacuum
  EXPECT_EQ(r.tombstones.count("a"), 0u);  // expired
  EXPECT_EQ(r.txns.at("j").version, 1);
  EXPECT_EQ(*r.protocol, *s.protocol);
  EXPECT_EQ(*r.metadata, *s.metadata);
}

TEST(TableCheckpoint, SidecarsAreUnimplementedNamingTheFile) {
  CheckpointMetadata meta;
  meta.version = 3;
  Sidecar sidecar;
  sidecar.path = "016ae953.parquet";
  TableState r;
  Status st = ApplyCheckpoint(&r, 3, Parse({meta, Protocol{}, SomeMetadata(), sidecar}), "cp");
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("016ae953.parquet"), std::string::npos);
}

TEST(TableCheckpoint, ProtocolUpgradeNamesLegacyFeatures) {
  Protocol p = ProtocolWithV2Checkpoints(Protocol{});
  EXPECT_EQ(p.min_reader_version, 3);
  EXPECT_EQ(p.min_writer_version, 7);
  EXPECT_TRUE(p.HasReaderFeature("v2Checkpoint"));
  EXPECT_TRUE(p.HasWriterFeature("v2Checkpoint"));
  EXPECT_TRUE(p.HasWriterFeature("appendOnly"));
  EXPECT_TRUE(p.HasWriterFeature("invariants"));
  EXPECT_EQ(ProtocolWithV2Checkpoints(p), p);
}

TEST(TableCheckpoint, LastCheckpointHintRoundTripsAndBadHintsAreIgnored) {
  LastCheckpointHint h;
  h.version = 100;
  h.size = 7;
  h.file = "x";
  auto back = ParseLastCheckpoint(SerializeLastCheckpoint(h));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->version, 100);
  EXPECT_EQ(back->file, "x");
  EXPECT_FALSE(ParseLastCheckpoint("{\"version\":").has_value());
  EXPECT_FALSE(ParseLastCheckpoint("{\"size\":3}").has_value());
}

TEST(TablePredicate, ParsesAndMatchesPartitionValues) {
  auto p = FilePredicate::Parse("source = 'crawl-3' AND lang IN ('en', 'de') and x IS NOT NULL");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->clauses.size(), 3u);
  PartitionValues v = {{"source", "crawl-3"}, {"lang", "de"}, {"x", "1"}};
  EXPECT_TRUE(p->Matches(v));
  v["lang"] = "fr";
  EXPECT_FALSE(p->Matches(v));
  auto back = FilePredicate::Parse(p->ToString());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *p);
  EXPECT_TRUE(FilePredicate::Parse("")->matches_all());
  auto quote = FilePredicate::Parse("s != 'it''s'");
  ASSERT_TRUE(quote.ok());
  EXPECT_EQ(quote->clauses[0].values[0], "it's");
  // Null partitions fail =, != and IN (SQL), match IS NULL.
  PartitionValues null_source = {{"s", std::nullopt}};
  EXPECT_FALSE(quote->Matches(null_source));
  EXPECT_TRUE(FilePredicate::Parse("s IS NULL")->Matches(null_source));
}

TEST(TablePredicate, MalformedPredicateNamesThePosition) {
  for (const char* bad : {"source =", "source = 'x", "= 'x'", "source ~ 'x'", "a = 'x' OR b = 'y'",
                          "a IN 'x'", "a NOT = 'x'"}) {
    auto p = FilePredicate::Parse(bad);
    EXPECT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("position"), std::string::npos) << bad;
  }
  auto p = FilePredicate::Parse("lang = 'en'");
  Status s = p->Validate({"source"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a partition column"), std::string::npos);
}

TEST(TableDataPath, EncodesLikeAUriAndRefusesPathsOutsideTheRoot) {
  std::string dir = PartitionDirectory({{"source", "a b/c:d"}}, {"source"});
  EXPECT_EQ(dir, "source=a b%2Fc%3Ad");
  std::string spelled = EncodeLogPath(dir + "/part-1.zst");
  EXPECT_EQ(spelled, "source=a%20b%252Fc%253Ad/part-1.zst");
  EXPECT_EQ(*DecodeLogPath(spelled), dir + "/part-1.zst");
  for (const char* bad : {"/etc/passwd", "../other/x", "a/../../x", "s3://bucket/x", "a//b",
                          "file:/x", "%2e%2e/x", "x%2", "x%zz"}) {
    auto d = DecodeLogPath(bad);
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TableTimestamp, ParsesIsoAndFormatsUtc) {
  EXPECT_EQ(*ParseTimestamp("1970-01-01"), 0);
  EXPECT_EQ(*ParseTimestamp("2026-12-01T10:20:30.123Z"), *ParseTimestamp("1796120430123"));
  EXPECT_EQ(*ParseTimestamp("2026-12-01T12:20:30.123+02:00"),
            *ParseTimestamp("2026-12-01T10:20:30.123"));
  EXPECT_EQ(FormatTimestamp(*ParseTimestamp("2026-12-01T10:20:30.123Z")),
            "2026-12-01T10:20:30.123Z");
  EXPECT_FALSE(ParseTimestamp("yesterday").ok());
  EXPECT_FALSE(ParseTimestamp("2026-13-01").ok());
}

}  // namespace
}  // namespace sluice::table

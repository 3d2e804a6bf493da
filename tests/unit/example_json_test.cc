#include "sluice/format/example_json.h"

#include <gtest/gtest.h>

#include <limits>

#include "format/base64.h"
#include "unit/example_test_util.h"

namespace sluice::format {
namespace {

using namespace testing;  // NOLINT: wire helpers

TEST(Base64, Rfc4648Vectors) {
  const char* vectors[][2] = {{"", ""},
                              {"f", "Zg=="},
                              {"fo", "Zm8="},
                              {"foo", "Zm9v"},
                              {"foob", "Zm9vYg=="},
                              {"fooba", "Zm9vYmE="},
                              {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    std::string e;
    AppendBase64(&e, plain);
    EXPECT_EQ(e, encoded);
    std::string d;
    EXPECT_TRUE(DecodeBase64(encoded, &d));
    EXPECT_EQ(d, plain);
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  std::string e, d;
  AppendBase64(&e, all);
  ASSERT_TRUE(DecodeBase64(e, &d));
  EXPECT_EQ(d, all);
}

TEST(Base64, RejectsNonCanonicalText) {
  std::string d;
  for (const char* bad :
       {"Zg", "Zg=", "Z===", "====", "Zh==", "Zm9=", "Zm 9", "Zm9v====", "=Zm9"}) {
    EXPECT_FALSE(DecodeBase64(bad, &d)) << bad;
  }
}

TEST(ExampleJson, WritesEveryKind) {
  std::string record = ExampleBuilder()
                           .AddBytes("b", {"foo", ""})
                           .AddFloats("f", {0.1f, -0.0f, 1e10f, 3.0f})
                           .AddInt64s("i", {-9223372036854775807 - 1, 42})
                           .Serialize() +
                       ExampleOf(Entry("none", ""));
  ExampleView e;
  ASSERT_TRUE(e.Parse(record).ok());
  EXPECT_EQ(ExampleToJson(e), R"({"b":{"bytes":["Zm9v",""]},"f":{"float":[0.1,-0.0,1e+10,3]},)"
                              R"("i":{"int64":[-9223372036854775808,42]},"none":{}})");
}

TEST(ExampleJson, NonFiniteFloatsAreStrings) {
  const float kInf = std::numeric_limits<float>::infinity();
  std::string record = ExampleBuilder()
                           .AddFloats("f", {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf})
                           .Serialize();
  ExampleView e;
  ASSERT_TRUE(e.Parse(record).ok());
  EXPECT_EQ(ExampleToJson(e), R"({"f":{"float":["NaN","Infinity","-Infinity"]}})");
}

TEST(ExampleJson, NamesAreEscapedAndInvalidUtf8Replaced) {
  std::string record = ExampleBuilder()
                           .AddInt64s("q\"\\\n\x01", {1})
                           .AddInt64s("caf\xc3\xa9", {2})
                           .AddInt64s("bad\xff\xc3", {3})
                           .AddInt64s("surrogate\xed\xa0\x80", {4})
                           .Serialize();
  ExampleView e;
  ASSERT_TRUE(e.Parse(record).ok());
  EXPECT_EQ(ExampleToJson(e),
            "{\"bad\xef\xbf\xbd\xef\xbf\xbd\":{\"int64\":[3]},\"caf\xc3\xa9\":{\"int64\":[2]},"
            "\"q\\\"\\\\\\u000a\\u0001\":{\"int64\":[1]},"
            "\"surrogate\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\":{\"int64\":[4]}}");
}

TEST(ExampleJson, FromJsonRoundTripsBytesExactly) {
  std::string record =
      ExampleBuilder()
          .AddBytes("b", {std::string("\0\xff\x10", 3), "text"})
          .AddFloats("f", {0.1f, 1.17549435e-38f, 3.4028235e38f, -1.5f, -0.0f, 1e-45f})
          .AddInt64s("i", {std::numeric_limits<int64_t>::min(), -1, 0,
                           std::numeric_limits<int64_t>::max()})
          .AddFloats("nan", {std::numeric_limits<float>::quiet_NaN()})
          .Serialize();
  ExampleView e;
  ASSERT_TRUE(e.Parse(record).ok());
  ExampleBuilder rebuilt;
  ASSERT_TRUE(ExampleFromJson(ExampleToJson(e), &rebuilt).ok());
  EXPECT_EQ(rebuilt.Serialize(), record);
}

TEST(ExampleJson, SequenceRoundTrip) {
  SequenceExampleBuilder b;
  b.context().AddBytes("id", "x").AddInt64s("n", {2});
  b.AddStepInt64s("tok", {1, 2}).AddStepInt64s("tok", {}).AddStepFloats("w", {0.5f});
  std::string record = b.Serialize();
  SequenceExampleView s;
  ASSERT_TRUE(s.Parse(record).ok());
  std::string json = SequenceExampleToJson(s);
  EXPECT_EQ(json,
            R"({"context":{"id":{"bytes":["eA=="]},"n":{"int64":[2]}},)"
            R"("feature_lists":{"tok":[{"int64":[1,2]},{"int64":[]}],"w":[{"float":[0.5]}]}})");
  SequenceExampleBuilder rebuilt;
  ASSERT_TRUE(SequenceExampleFromJson(json, &rebuilt).ok());
  EXPECT_EQ(rebuilt.Serialize(), record);
}

TEST(ExampleJson, FromJsonRejectsMalformedSpecs) {
  const char* bad[] = {
      "[]",                            // not an object
      "{",                             // not JSON
      R"({"x": {}})",                  // no kind: builders cannot express it
      R"({"x": {"int32": [1]}})",      // unknown kind
      R"({"x": {"bytes": ["Zg="]}})",  // bad base64
      R"({"x": {"bytes": [1]}})",
      R"({"x": {"int64": [1.5]}})",
      R"({"x": {"int64": [9223372036854775808]}})",  // past int64
      R"({"x": {"float": ["nan"]}})",
      R"({"x": {"float": [1], "int64": [1]}})",
      R"({"x": {"float": 1}})",
  };
  for (const char* json : bad) {
    ExampleBuilder b;
    Status s = ExampleFromJson(json, &b);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << json;
  }
  SequenceExampleBuilder sb;
  EXPECT_FALSE(SequenceExampleFromJson(R"({"contxt": {}})", &sb).ok());
  EXPECT_FALSE(SequenceExampleFromJson(R"({"feature_lists": {"l": {"int64": [1]}}})", &sb).ok());
  EXPECT_TRUE(SequenceExampleFromJson(R"({"feature_lists": {"l": [{"int64": [1]}]}})", &sb).ok());
}

// Issue 13, item 3: a float feature must not change a value beyond rounding a fraction.
TEST(ExampleJson, FloatsThatFloat32CannotHoldAreErrors) {
  EXPECT_EQ(*IntegerToFloat32(16777216), 16777216.0f);
  EXPECT_EQ(*IntegerToFloat32(-16777216), -16777216.0f);
  EXPECT_EQ(*IntegerToFloat32(int64_t{1} << 40), 1099511627776.0f);  // low bits zero: exact
  EXPECT_EQ(*IntegerToFloat32(INT64_MIN), -9223372036854775808.0f);
  for (int64_t v :
       {int64_t{16777217}, int64_t{12345678901}, int64_t{INT64_MAX}, int64_t{-16777217}}) {
    Result<float> f = IntegerToFloat32(v);
    ASSERT_EQ(f.status().code(), StatusCode::kInvalidArgument) << v;
    EXPECT_NE(f.status().message().find("integer " + std::to_string(v) +
                                        " cannot be stored exactly as float32"),
              std::string::npos)
        << f.status().message();
  }
  EXPECT_NE(IntegerToFloat32(16777217).status().message().find("it would become 16777216"),
            std::string::npos);
  EXPECT_EQ(*NumberToFloat32(0.1), 0.1f);  // fractions round, as in every float feature
  EXPECT_EQ(*NumberToFloat32(-0.0), 0.0f);
  EXPECT_EQ(*NumberToFloat32(3.4e38), 3.4e38f);
  EXPECT_NE(NumberToFloat32(1e40).status().message().find("1e+40 is beyond float32's range"),
            std::string::npos);
  EXPECT_NE(NumberToFloat32(-1e-50).status().message().find("-1e-50 is too small"),
            std::string::npos);

  ExampleBuilder b;
  Status s = ExampleFromJson(R"({"x": {"float": [0.5, 16777217]}})", &b);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("feature \"x\": integer 16777217"), std::string::npos) << s.message();
  EXPECT_FALSE(ExampleFromJson(R"({"x": {"float": [1e39]}})", &b).ok());
  EXPECT_TRUE(ExampleFromJson(R"({"x": {"float": [0.5, 16777216, 1e38]}})", &b).ok());
}

TEST(SchemaInference, FixedVaryingAndMissingCounts) {
  ExampleView e;
  SchemaInference inference;
  std::string r1 = ExampleBuilder()
                       .AddBytes("img", "a")
                       .AddFloats("box", {1, 2})
                       .AddInt64s("tags", {1})
                       .Serialize();
  std::string r2 = ExampleBuilder()
                       .AddBytes("img", "b")
                       .AddFloats("box", {3, 4})
                       .AddInt64s("tags", {1, 2})
                       .Serialize();
  std::string r3 = ExampleBuilder().AddBytes("img", "c").AddFloats("box", {5, 6}).Serialize();
  for (const std::string* r : {&r1, &r2, &r3}) {
    ASSERT_TRUE(e.Parse(*r).ok());
    ASSERT_TRUE(inference.Add(e).ok());
  }
  auto schema = inference.schema();
  EXPECT_EQ(inference.records(), 3u);
  EXPECT_EQ(schema.at("img").type, FeatureType::kBytes);
  EXPECT_EQ(schema.at("img").values_per_record, 1);
  EXPECT_EQ(schema.at("box").type, FeatureType::kFloat);
  EXPECT_EQ(schema.at("box").values_per_record, 2);
  EXPECT_EQ(schema.at("tags").values_per_record, -1);
}

TEST(SchemaInference, MissingFromSomeRecordsVaries) {
  ExampleView e;
  SchemaInference inference;
  ASSERT_TRUE(e.Parse(ExampleBuilder().AddInt64s("a", {1}).Serialize()).ok());
  ASSERT_TRUE(inference.Add(e).ok());
  ASSERT_TRUE(e.Parse(ExampleBuilder().AddInt64s("b", {1}).Serialize()).ok());
  ASSERT_TRUE(inference.Add(e).ok());
  EXPECT_EQ(inference.schema().at("a").values_per_record, -1);
  EXPECT_EQ(inference.schema().at("b").values_per_record, -1);
}

TEST(SchemaInference, TypeConflictNamesFeatureAndRecord) {
  ExampleView e;
  SchemaInference inference;
  std::string none = ExampleOf(Entry("x", ""));
  ASSERT_TRUE(e.Parse(none).ok());
  ASSERT_TRUE(inference.Add(e).ok());  // no kind: compatible with anything
  std::string ints = ExampleBuilder().AddInt64s("x", {1}).AddInt64s("y", {1}).Serialize();
  ASSERT_TRUE(e.Parse(ints).ok());
  ASSERT_TRUE(inference.Add(e).ok());
  std::string floats = ExampleBuilder().AddFloats("x", {1}).AddInt64s("z", {1}).Serialize();
  ASSERT_TRUE(e.Parse(floats).ok());
  Status s = inference.Add(e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "feature \"x\" is int64 in earlier records but float in record 2");
  EXPECT_EQ(inference.records(), 2u);  // unchanged by the failed Add
  EXPECT_EQ(inference.schema().count("z"), 0u);
  EXPECT_EQ(inference.schema().at("x").type, FeatureType::kInt64);
}

TEST(SchemaInference, MergeEqualsSequentialAdds) {
  std::vector<std::string> records = {
      ExampleBuilder().AddInt64s("a", {1}).AddFloats("f", {1, 2}).Serialize(),
      ExampleBuilder().AddInt64s("a", {2}).Serialize(),
      ExampleBuilder().AddInt64s("a", {3}).AddFloats("f", {1, 2}).Serialize(),
  };
  ExampleView e;
  SchemaInference all, first, rest;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(e.Parse(records[i]).ok());
    ASSERT_TRUE(all.Add(e).ok());
    ASSERT_TRUE((i == 0 ? first : rest).Add(e).ok());
  }
  ASSERT_TRUE(first.Merge(rest).ok());
  EXPECT_EQ(first.records(), all.records());
  auto a = all.schema(), b = first.schema();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, s] : a) {
    EXPECT_EQ(b.at(name).type, s.type) << name;
    EXPECT_EQ(b.at(name).values_per_record, s.values_per_record) << name;
  }
  EXPECT_EQ(a.at("a").values_per_record, 1);
  EXPECT_EQ(a.at("f").values_per_record, -1);
}

}  // namespace
}  // namespace sluice::format

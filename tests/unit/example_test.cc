#include "sluice/format/example.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "unit/example_test_util.h"

namespace sluice::format {
namespace {

using namespace testing;  // NOLINT: wire helpers

std::vector<int64_t> Int64sOf(const ExampleView& e, std::string_view name) {
  const FeatureView* f = e.Find(name);
  EXPECT_NE(f, nullptr) << name;
  return f == nullptr ? std::vector<int64_t>{} : f->int64s;
}

TEST(ExampleCodec, RoundTripEveryType) {
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  std::vector<int64_t> ints = {0,
                               1,
                               -1,
                               127,
                               128,
                               300,
                               std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max()};
  std::vector<float> floats = {0.0f, -0.0f, 1.5f, -3.25e-30f, kInf, -kInf, kNan, 1e-45f};
  std::vector<std::string> bytes = {"", "a", std::string(300, 'z'), std::string("\0\xff", 2)};
  std::string serialized = ExampleBuilder()
                               .AddInt64s("ints", ints)
                               .AddFloats("floats", floats)
                               .AddBytes("bytes", bytes)
                               .AddBytes("one", "single")
                               .Serialize();
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok());
  ASSERT_EQ(e.features().size(), 4u);
  EXPECT_EQ(e.Find("ints")->type, FeatureType::kInt64);
  EXPECT_EQ(e.Find("ints")->int64s, ints);
  const FeatureView* f = e.Find("floats");
  ASSERT_EQ(f->type, FeatureType::kFloat);
  ASSERT_EQ(f->floats.size(), floats.size());
  for (size_t i = 0; i < floats.size(); ++i) {  // bit-exact, NaN and -0 included
    EXPECT_EQ(std::bit_cast<uint32_t>(f->floats[i]), std::bit_cast<uint32_t>(floats[i])) << i;
  }
  const FeatureView* b = e.Find("bytes");
  ASSERT_EQ(b->type, FeatureType::kBytes);
  ASSERT_EQ(b->bytes.size(), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(b->bytes[i], bytes[i]);
  EXPECT_EQ(e.Find("one")->bytes.at(0), "single");
  EXPECT_EQ(e.Find("missing"), nullptr);
  EXPECT_EQ(b->size(), 4u);
}

TEST(ExampleCodec, BytesMatchPythonProtobuf) {
  // Goldens from Python protobuf's SerializeToString(deterministic=True) with TensorFlow's
  // example.proto; tests/python/test_example_compat.py checks many more.
  EXPECT_EQ(ExampleBuilder().AddInt64s("a", {1}).Serialize(), Hex("0a0c0a0a0a016112051a030a0101"));
  EXPECT_EQ(ExampleBuilder()
                .AddInt64s("label", {-1, 300})
                .AddBytes("text", {"hi", ""})
                .AddFloats("w", {1.5f})
                .AddFloats("e", {})
                .Serialize(),
            Hex("0a450a070a0165120212000a190a056c6162656c12101a0e0a0cffffffffffffffffff01ac020a10"
                "0a047465787412080a060a0268690a000a0d0a0177120812060a040000c03f"));
  SequenceExampleBuilder s;
  s.context().AddInt64s("id", {7});
  s.AddStepInt64s("tok", {1, 2}).AddStepBytes("tok", {"x"});
  EXPECT_EQ(s.Serialize(), Hex("0a0d0a0b0a02696412051a030a010712180a160a03746f6b120f0a061a040a"
                               "0201020a050a030a0178"));
}

TEST(ExampleCodec, EmptyListsKeepTheirType) {
  std::string serialized = ExampleBuilder()
                               .AddBytes("b", std::vector<std::string>{})
                               .AddFloats("f", {})
                               .AddInt64s("i", {})
                               .Serialize();
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok());
  EXPECT_EQ(e.Find("b")->type, FeatureType::kBytes);
  EXPECT_EQ(e.Find("f")->type, FeatureType::kFloat);
  EXPECT_EQ(e.Find("i")->type, FeatureType::kInt64);
  for (const auto& [name, f] : e.features()) EXPECT_EQ(f.size(), 0u) << name;
}

TEST(ExampleCodec, EmptyExampleHasNoFeatures) {
  EXPECT_EQ(ExampleBuilder().Serialize(), "");
  ExampleView e;
  ASSERT_TRUE(e.Parse("").ok());
  EXPECT_TRUE(e.features().empty());
  ASSERT_TRUE(e.Parse(Hex("0a00")).ok());  // Example(features=Features())
  EXPECT_TRUE(e.features().empty());
}

TEST(ExampleCodec, HugeListsRoundTrip) {
  std::vector<int64_t> ints(1 << 20);
  std::vector<float> floats(1 << 20);
  for (size_t i = 0; i < ints.size(); ++i) {
    ints[i] = static_cast<int64_t>(i * 2654435761u) - (int64_t{1} << 40);
    floats[i] = static_cast<float>(i) * 0.25f;
  }
  std::vector<std::string> bytes(100000, "abc");
  bytes.push_back(std::string(5 << 20, 'q'));  // one 5 MiB value
  std::string serialized =
      ExampleBuilder().AddInt64s("i", ints).AddFloats("f", floats).AddBytes("b", bytes).Serialize();
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok());
  EXPECT_EQ(e.Find("i")->int64s, ints);
  EXPECT_EQ(e.Find("f")->floats, floats);
  ASSERT_EQ(e.Find("b")->bytes.size(), bytes.size());
  EXPECT_EQ(e.Find("b")->bytes.back().size(), size_t{5} << 20);
}

TEST(ExampleCodec, NegativeInt64IsATenByteVarint) {
  std::string serialized = ExampleBuilder().AddInt64s("n", {-2}).Serialize();
  EXPECT_NE(serialized.find(Hex("0a0afeffffffffffffffff01")), std::string::npos);
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok());
  EXPECT_EQ(Int64sOf(e, "n"), std::vector<int64_t>{-2});
}

TEST(ExampleCodec, UnpackedAndMixedEncodingsAccepted) {
  std::string unpacked_ints = VarintField(1, 5) + VarintField(1, static_cast<uint64_t>(-7));
  std::string packed_ints = Field(1, Varint(8) + Varint(9));
  std::string unpacked_floats = Fixed32Field(1, std::bit_cast<uint32_t>(2.5f));
  std::string packed_floats = Field(1, std::string("\0\0\x80\x3f", 4));  // 1.0f
  std::string serialized =
      ExampleOf(Entry("i", Int64Feature(unpacked_ints + packed_ints + unpacked_ints)) +
                Entry("f", FloatFeature(unpacked_floats + packed_floats)));
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok()) << e.Parse(serialized).ToString();
  EXPECT_EQ(Int64sOf(e, "i"), (std::vector<int64_t>{5, -7, 8, 9, 5, -7}));
  EXPECT_EQ(e.Find("f")->floats, (std::vector<float>{2.5f, 1.0f}));
}

TEST(ExampleCodec, UnknownFieldsOfEveryWireTypeSkipped) {
  std::string u = UnknownFields();
  std::string list = u + VarintField(1, 42) + u;
  std::string feature = u + Int64Feature(list) + u;
  std::string entry = u + Field(1, "x") + u + Field(2, feature) + u;
  std::string bytes_feature = BytesFeature(u + Field(1, "v") + u);
  std::string features = u + Field(1, entry) + u + Entry("b", bytes_feature) + u;
  std::string serialized = u + Field(1, features) + u;
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok()) << e.Parse(serialized).ToString();
  EXPECT_EQ(Int64sOf(e, "x"), std::vector<int64_t>{42});
  EXPECT_EQ(e.Find("b")->bytes.at(0), "v");
}

TEST(ExampleCodec, DuplicateKeyLastWins) {
  std::string serialized = ExampleOf(Entry("k", Int64Feature(Field(1, Varint(1) + Varint(2)))) +
                                     Entry("k", Int64Feature(Field(1, Varint(5)))));
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok());
  EXPECT_EQ(Int64sOf(e, "k"), std::vector<int64_t>{5});
  // A second Example.features field merges into the first map, with the same rule.
  serialized = ExampleOf(Entry("k", Int64Feature(Field(1, Varint(1))))) +
               ExampleOf(Entry("k", FloatFeature("")) + Entry("j", Int64Feature("")));
  ASSERT_TRUE(e.Parse(serialized).ok());
  EXPECT_EQ(e.Find("k")->type, FeatureType::kFloat);
  EXPECT_EQ(e.features().size(), 2u);
}

TEST(ExampleCodec, FeatureMergeFollowsOneofRules) {
  // Same kind twice: the lists merge. Another kind: it replaces the earlier one.
  std::string same = Int64Feature(Field(1, Varint(1))) + Int64Feature(Field(1, Varint(7)));
  std::string other = Int64Feature(Field(1, Varint(1))) + FloatFeature(Fixed32Field(1, 0));
  // A value field repeated inside one map entry merges too.
  std::string split_entry = Field(1, Field(1, "s") + Field(2, Int64Feature(VarintField(1, 3))) +
                                         Field(2, Int64Feature(VarintField(1, 4))));
  ExampleView e;
  ASSERT_TRUE(e.Parse(ExampleOf(Entry("same", same) + Entry("other", other) + split_entry)).ok());
  EXPECT_EQ(Int64sOf(e, "same"), (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(e.Find("other")->type, FeatureType::kFloat);
  EXPECT_TRUE(e.Find("other")->int64s.empty());
  EXPECT_EQ(Int64sOf(e, "s"), (std::vector<int64_t>{3, 4}));
}

TEST(ExampleCodec, FeatureWithNoKindIsNone) {
  // No kind at all, a missing value field, and a missing key (the empty name).
  std::string serialized = ExampleOf(Entry("none", "") + Field(1, Field(1, "novalue")) +
                                     Field(1, Field(2, Int64Feature(VarintField(1, 9)))));
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok());
  EXPECT_EQ(e.Find("none")->type, FeatureType::kNone);
  EXPECT_EQ(e.Find("novalue")->type, FeatureType::kNone);
  EXPECT_EQ(Int64sOf(e, ""), std::vector<int64_t>{9});
  EXPECT_EQ(FeatureTypeName(FeatureType::kNone), "none");
}

TEST(ExampleCodec, BytesAreViewsIntoTheInput) {
  std::string serialized = ExampleBuilder()
                               .AddBytes("image", std::string(110 * 1024, 'j'))
                               .AddBytes("name", {"a", "bc"})
                               .Serialize();
  ExampleView e;
  ASSERT_TRUE(e.Parse(serialized).ok());
  const char* begin = serialized.data();
  const char* end = begin + serialized.size();
  for (const auto& [name, f] : e.features()) {
    for (ByteView v : f.bytes) {
      EXPECT_GE(v.data(), begin) << name;
      EXPECT_LE(v.data() + v.size(), end) << name;
    }
  }
  EXPECT_EQ(e.Find("image")->bytes[0].size(), 110u * 1024);
}

TEST(ExampleCodec, ReparseForgetsEarlierRecord) {
  ExampleView e;
  ASSERT_TRUE(
      e.Parse(ExampleBuilder().AddInt64s("a", {1}).AddInt64s("b", {2, 3}).Serialize()).ok());
  ASSERT_TRUE(e.Parse(ExampleBuilder().AddFloats("b", {4}).AddInt64s("c", {5}).Serialize()).ok());
  ASSERT_EQ(e.features().size(), 2u);
  EXPECT_EQ(e.Find("a"), nullptr);
  EXPECT_EQ(e.Find("b")->type, FeatureType::kFloat);
  EXPECT_TRUE(e.Find("b")->int64s.empty());
  EXPECT_EQ(Int64sOf(e, "c"), std::vector<int64_t>{5});
  // After an error, the view is empty.
  EXPECT_FALSE(e.Parse(Hex("0a05")).ok());
  EXPECT_TRUE(e.features().empty());
}

TEST(SequenceExampleCodec, RoundTripContextAndLists) {
  SequenceExampleBuilder b;
  b.context().AddInt64s("length", {3}).AddBytes("id", "doc-1");
  b.AddStepInt64s("tokens", {1, 2}).AddStepInt64s("tokens", {}).AddStepInt64s("tokens", {3});
  b.AddStepFloats("scores", {0.5f}).AddStepBytes("raw", {"x", "y"});
  std::string serialized = b.Serialize();  // views point into it: it must outlive them
  SequenceExampleView s;
  ASSERT_TRUE(s.Parse(serialized).ok());
  EXPECT_EQ(s.context().Find("length")->int64s, std::vector<int64_t>{3});
  EXPECT_EQ(s.context().Find("id")->bytes.at(0), "doc-1");
  const auto& tokens = s.feature_lists().at("tokens");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].int64s, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(tokens[1].type, FeatureType::kInt64);
  EXPECT_TRUE(tokens[1].int64s.empty());
  EXPECT_EQ(tokens[2].int64s, std::vector<int64_t>{3});
  EXPECT_EQ(s.feature_lists().at("scores").at(0).floats, std::vector<float>{0.5f});
  EXPECT_EQ(s.feature_lists().at("raw").at(0).bytes.size(), 2u);
  b.Clear();
  EXPECT_EQ(b.Serialize(), "");
}

TEST(SequenceExampleCodec, DecodesPythonBytesWithEmptyStep) {
  // Python: a FeatureList whose last step is Feature() (no kind).
  std::string record = Hex(
      "0a0d0a0b0a02696412051a030a0107121a0a180a03746f6b12110a061a040a0201020a050a030a01780a00");
  SequenceExampleView s;
  ASSERT_TRUE(s.Parse(record).ok());
  const auto& tok = s.feature_lists().at("tok");
  ASSERT_EQ(tok.size(), 3u);
  EXPECT_EQ(tok[1].bytes.at(0), "x");
  EXPECT_EQ(tok[2].type, FeatureType::kNone);
}

TEST(SequenceExampleCodec, DuplicateListKeyLastWinsAndUnknownFieldsSkipped) {
  std::string u = UnknownFields();
  std::string step = Field(1, Int64Feature(VarintField(1, 1)));
  std::string lists = Entry("l", step + step + u) + u + Entry("l", u + step);
  std::string serialized = u + Field(2, lists) + u + Field(1, Entry("c", "")) + u;
  SequenceExampleView s;
  ASSERT_TRUE(s.Parse(serialized).ok()) << s.Parse(serialized).ToString();
  EXPECT_EQ(s.feature_lists().at("l").size(), 1u);
  EXPECT_EQ(s.context().Find("c")->type, FeatureType::kNone);
}

}  // namespace
}  // namespace sluice::format

// ExampleParser, the pipeline's fast path: only wanted features, kNone when absent, no
// allocation once warm, and the same answers as ExampleView.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/format/example.h"
#include "unit/example_test_util.h"

namespace sluice::format {
namespace {

using namespace testing;  // NOLINT: wire helpers

std::string ImageRecord(int64_t label, size_t image_bytes) {
  return ExampleBuilder()
      .AddBytes("image/encoded", std::string(image_bytes, 'j'))
      .AddInt64s("image/class/label", {label})
      .AddBytes("image/filename", "n01440764_" + std::to_string(label) + ".JPEG")
      .AddFloats("image/object/bbox/xmin", {0.1f, 0.2f})
      .Serialize();
}

TEST(ExampleParser, SelectsOnlyWantedFeaturesAndAbsentIsNone) {
  std::string record = ImageRecord(7, 1000);
  ExampleParser parser({"image/class/label", "missing", "image/encoded"});
  std::vector<FeatureView> out;
  ASSERT_TRUE(parser.Parse(record, &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].type, FeatureType::kInt64);
  EXPECT_EQ(out[0].int64s, std::vector<int64_t>{7});
  EXPECT_EQ(out[1].type, FeatureType::kNone);
  EXPECT_EQ(out[1].size(), 0u);
  ASSERT_EQ(out[2].type, FeatureType::kBytes);
  ASSERT_EQ(out[2].bytes.size(), 1u);
  // Zero copy: the image is a view inside the record.
  EXPECT_GE(out[2].bytes[0].data(), record.data());
  EXPECT_LE(out[2].bytes[0].data() + out[2].bytes[0].size(), record.data() + record.size());
  EXPECT_EQ(parser.wanted().size(), 3u);
}

TEST(ExampleParser, DuplicateWantedNameFillsEverySlot) {
  std::string record = ImageRecord(3, 10);
  ExampleParser parser({"image/class/label", "image/filename", "image/class/label"});
  std::vector<FeatureView> out;
  ASSERT_TRUE(parser.Parse(record, &out).ok());
  EXPECT_EQ(out[0].int64s, std::vector<int64_t>{3});
  EXPECT_EQ(out[2].int64s, std::vector<int64_t>{3});
  EXPECT_EQ(out[1].bytes.at(0), "n01440764_3.JPEG");
}

TEST(ExampleParser, AbsentAfterPresentIsClearedOnReuse) {
  ExampleParser parser({"a", "b"});
  std::vector<FeatureView> out;
  std::string first = ExampleBuilder().AddInt64s("a", {1}).AddFloats("b", {2}).Serialize();
  std::string second = ExampleBuilder().AddInt64s("a", {5, 6}).Serialize();
  ASSERT_TRUE(parser.Parse(first, &out).ok());
  ASSERT_TRUE(parser.Parse(second, &out).ok());
  EXPECT_EQ(out[0].int64s, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(out[1].type, FeatureType::kNone);
  EXPECT_TRUE(out[1].floats.empty());
}

TEST(ExampleParser, SteadyStateKeepsBuffers) {
  // Same-shaped records reuse the output vectors' storage: no reallocation once warm.
  ExampleParser parser({"image/object/bbox/xmin", "image/class/label", "image/encoded"});
  std::vector<FeatureView> out;
  std::string a = ImageRecord(1, 100), b = ImageRecord(2, 200);
  ASSERT_TRUE(parser.Parse(a, &out).ok());
  const float* floats = out[0].floats.data();
  const int64_t* ints = out[1].int64s.data();
  const ByteView* views = out[2].bytes.data();
  for (int i = 0; i < 4; ++i) {  // ends with a
    ASSERT_TRUE(parser.Parse(i % 2 ? a : b, &out).ok());
    EXPECT_EQ(out[0].floats.data(), floats);
    EXPECT_EQ(out[1].int64s.data(), ints);
    EXPECT_EQ(out[2].bytes.data(), views);
  }
  EXPECT_EQ(out[1].int64s, std::vector<int64_t>{1});
  // ExampleView keeps each name's node and buffers too.
  ExampleView view;
  ASSERT_TRUE(view.Parse(a).ok());
  const FeatureView* label = view.Find("image/class/label");
  const int64_t* label_ints = label->int64s.data();
  ASSERT_TRUE(view.Parse(b).ok());
  EXPECT_EQ(view.Find("image/class/label"), label);
  EXPECT_EQ(label->int64s.data(), label_ints);
  EXPECT_EQ(label->int64s, std::vector<int64_t>{2});
}

TEST(ExampleParser, AgreesWithExampleView) {
  std::string u = UnknownFields();
  std::vector<std::string> records = {
      ImageRecord(9, 50),
      "",
      ExampleOf(Entry("k", Int64Feature(VarintField(1, 1))) + u + Entry("k", FloatFeature(""))),
      ExampleOf(Entry("none", "")) + u + ExampleOf(Entry("k", BytesFeature(Field(1, "v")))),
  };
  ExampleParser parser({"k", "none", "image/encoded", "image/object/bbox/xmin", "zzz"});
  for (const std::string& record : records) {
    ExampleView view;
    std::vector<FeatureView> out;
    ASSERT_TRUE(view.Parse(record).ok());
    ASSERT_TRUE(parser.Parse(record, &out).ok());
    for (size_t i = 0; i < parser.wanted().size(); ++i) {
      const FeatureView* want = view.Find(parser.wanted()[i]);
      if (want == nullptr) {
        EXPECT_EQ(out[i].type, FeatureType::kNone);
        continue;
      }
      EXPECT_EQ(out[i].type, want->type) << parser.wanted()[i];
      EXPECT_EQ(out[i].bytes, want->bytes);
      EXPECT_EQ(out[i].floats, want->floats);
      EXPECT_EQ(out[i].int64s, want->int64s);
    }
  }
}

TEST(ExampleParser, MalformedValueOfUnwantedFeatureIsNotDecoded) {
  // Documented trade-off: the framing of every feature is checked, but the values of an
  // unwanted one are skipped unread, so only ExampleView reports this record.
  std::string record = ExampleOf(Entry("bad", FloatFeature(Field(1, "abc"))) +
                                 Entry("good", Int64Feature(VarintField(1, 4))));
  std::vector<FeatureView> out;
  EXPECT_TRUE(ExampleParser({"good"}).Parse(record, &out).ok());
  EXPECT_EQ(out[0].int64s, std::vector<int64_t>{4});
  EXPECT_EQ(ExampleParser({"bad"}).Parse(record, &out).code(), StatusCode::kDataLoss);
  ExampleView view;
  EXPECT_EQ(view.Parse(record).code(), StatusCode::kDataLoss);
  // Broken framing is caught whatever is wanted.
  EXPECT_EQ(ExampleParser({"good"}).Parse(record.substr(0, record.size() - 1), &out).code(),
            StatusCode::kDataLoss);
}

}  // namespace
}  // namespace sluice::format

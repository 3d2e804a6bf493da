// parse_example: tf.train.Example records into typed tensors, and the errors that name the
// feature and record when a record does not fit the spec.
#include "pipeline_test_util.h"
#include "sluice/format/example.h"

namespace sluice::pipeline {
namespace {

using format::ExampleBuilder;
using testing::MakeIt;
using testing::StreamError;

// Record i: image = i+1 bytes of 'a'+i, label = i, box = {i, i+0.5, i+1}, tags = i strings.
std::shared_ptr<RecordSource> Examples(int n, bool drop_label_of_3 = false) {
  std::vector<std::vector<std::string>> shards(2);
  for (int i = 0; i < n; ++i) {
    ExampleBuilder b;
    b.AddBytes("image", std::string(static_cast<size_t>(i) + 1, static_cast<char>('a' + i)));
    if (!(drop_label_of_3 && i == 3)) b.AddInt64s("label", {i});
    b.AddFloats("box", {float(i), float(i) + 0.5f, float(i) + 1});
    std::vector<std::string> tags;
    for (int t = 0; t < i; ++t) tags.push_back("t" + std::to_string(t));
    b.AddBytes("tags", tags);
    b.AddInt64s("unused", {1, 2, 3});
    shards[static_cast<size_t>(i) % 2].push_back(b.Serialize());
  }
  return NewMemorySource(std::move(shards));
}

std::vector<FeatureSpec> Specs() {
  return {FeatureSpec{"image", DType::kUInt8, Shape{-1}, false},
          FeatureSpec{"label", DType::kInt64, Shape(), false},
          FeatureSpec{"box", DType::kFloat32, Shape{3}, false},
          FeatureSpec{"tags", DType::kString, Shape{-1}, false}};
}

TEST(PipelineParseExample, DecodesWantedFeaturesIntoTypedTensors) {
  Dataset ds = Dataset::FromSource(Examples(6)).ParseExample(Specs());
  ASSERT_TRUE(ds.status().ok()) << ds.status().ToString();
  EXPECT_EQ(ds.schema().ToString(),
            "{image: uint8[-1], label: int64[], box: float32[3], tags: string[-1]}");
  auto it = MakeIt(ds, 2);
  Element e;
  int seen = 0;
  while (*it->Next(&e)) {
    int64_t label = *e.tensors[1].data<int64_t>();
    EXPECT_EQ(e.tensors[0].shape(), Shape({label + 1}));
    EXPECT_EQ(e.tensors[0].data<uint8_t>()[0], 'a' + label);
    EXPECT_FLOAT_EQ(e.tensors[2].data<float>()[1], float(label) + 0.5f);
    ASSERT_EQ(e.tensors[3].num_elements(), label);
    if (label > 1) {
      EXPECT_EQ(e.tensors[3].string(1), "t1");
    }
    ++seen;
  }
  EXPECT_EQ(seen, 6);
}

TEST(PipelineParseExample, BatchesAndPadsParsedFeatures) {
  PaddedBatchOptions o;
  o.batch_size = 3;
  auto it = MakeIt(Dataset::FromSource(Examples(6)).ParseExample(Specs()).PaddedBatch(o), 1);
  Element e;
  ASSERT_TRUE(*it->Next(&e));  // records 0, 2, 4 (shard 0 first)
  EXPECT_EQ(e.tensors[0].shape(), Shape({3, 5}));
  EXPECT_EQ(e.tensors[1].shape(), Shape({3}));
  EXPECT_EQ(e.tensors[2].shape(), Shape({3, 3}));
  EXPECT_EQ(e.tensors[3].shape(), Shape({3, 4}));
  EXPECT_EQ(e.tensors[3].string(4 + 1), "t1");  // row 1 (record 2), column 1
  EXPECT_EQ(e.tensors[3].string(2), "");        // row 0 is padding past its 0 tags
  EXPECT_EQ(it->schema()[4].name, "image_mask");
}

TEST(PipelineParseExample, MissingFeatureNamesFeatureAndRecord) {
  auto it = MakeIt(Dataset::FromSource(Examples(6, true)).ParseExample(Specs()), 1);
  Status s = StreamError(it.get());
  EXPECT_NE(s.message().find("parse_example: shard 'memory-shard-1' record 1"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("feature 'label' is missing"), std::string::npos);
}

TEST(PipelineParseExample, OptionalMissingFeatureParsesAsZeros) {
  std::vector<FeatureSpec> specs = Specs();
  specs[1].optional = true;
  specs.push_back(FeatureSpec{"absent", DType::kFloat32, Shape{2}, true});
  auto it = MakeIt(Dataset::FromSource(Examples(6, true)).ParseExample(specs), 1);
  Element e;
  int n = 0;
  while (*it->Next(&e)) {
    EXPECT_EQ(e.tensors[4].shape(), Shape({2}));
    EXPECT_EQ(e.tensors[4].data<float>()[1], 0.0f);
    if (e.tensors[0].shape()[0] == 4) {  // record 3
      EXPECT_EQ(*e.tensors[1].data<int64_t>(), 0);
    }
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(PipelineParseExample, WrongTypeAndWrongCountAreErrorsOrSkipped) {
  std::vector<FeatureSpec> specs = {FeatureSpec{"label", DType::kFloat32, Shape(), false}};
  auto it = MakeIt(Dataset::FromSource(Examples(2)).ParseExample(specs), 1);
  Element e;
  Result<bool> r = it->Next(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'label' is int64 in the record"), std::string::npos)
      << r.status().ToString();

  specs = {FeatureSpec{"box", DType::kFloat32, Shape{2}, false}};
  ParseExampleOptions po;
  po.on_error = ErrorPolicy::kSkip;
  auto skipping = MakeIt(Dataset::FromSource(Examples(4)).ParseExample(specs, po), 1);
  EXPECT_FALSE(*skipping->Next(&e)) << "every record has 3 box values: all skipped";
  EXPECT_EQ(skipping->stats().stages[1].skipped, 4u);
}

TEST(PipelineParseExample, CorruptRecordIsDataLossWithOffset) {
  auto it = MakeIt(Dataset::FromSource(NewMemorySource({{std::string("\x0a\x05\x0a\x03", 4)}}))
                       .ParseExample(Specs()),
                   1);
  Element e;
  Result<bool> r = it->Next(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
  EXPECT_NE(r.status().message().find("record 0"), std::string::npos);
}

TEST(PipelineParseExample, BadSpecsAreRejectedWhenBuilding) {
  Dataset records = Dataset::FromSource(Examples(1));
  EXPECT_FALSE(records.ParseExample({}).status().ok());
  EXPECT_FALSE(
      records.ParseExample({FeatureSpec{"x", DType::kInt64, Shape{-1, -1}, false}}).status().ok());
  EXPECT_FALSE(records.ParseExample(Specs()).ParseExample(Specs()).status().ok())
      << "parse needs serialized records";
}

}  // namespace
}  // namespace sluice::pipeline

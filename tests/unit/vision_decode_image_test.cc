// The decode_image stage over real shards: output shape/dtype/layout, the same crops for any
// thread count and after a restore, and bad images under the raise and skip policies.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline_test_util.h"
#include "sluice/format/example.h"
#include "sluice/format/shard_writer.h"
#include "sluice/io/file_system.h"
#include "sluice/vision/decode_image.h"
#include "vision_test_images.h"

namespace sluice::vision {
namespace {

using pipeline::Dataset;
using pipeline::Element;
using pipeline::ErrorPolicy;
using pipeline::FeatureSpec;
using pipeline::Iterator;
using pipeline::Shape;
using pipeline::testing::MakeIt;
using pipeline::testing::StreamError;

constexpr int kImages = 24;
constexpr int kTruncated = 13;  // record index of the truncated JPEG (one shard)

class DecodeImageStage : public ::testing::Test {
 protected:
  // One shard of kImages JPEGs of varying sizes, labelled by their index; with `bad`, record
  // kTruncated holds the first half of a JPEG.
  void WriteShard(bool bad) {
    auto w = format::ShardWriter::Open(fs_.get(), "/ds");
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int i = 0; i < kImages; ++i) {
      std::string jpeg = testing::EncodeJpegRgb(40 + 3 * i, 30 + 2 * (i % 5));
      if (bad && i == kTruncated) jpeg.resize(jpeg.size() / 2);
      format::ExampleBuilder b;
      b.AddBytes("image/encoded", jpeg).AddInt64s("label", {i});
      ASSERT_TRUE((*w)->Write(b.Serialize()).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
    shard_ = (*w)->manifest().shards.at(0).path;
  }

  Dataset Parsed() {
    pipeline::ReadOptions ro;
    ro.fs = fs_.get();
    ro.paths = {"/ds"};
    Result<Dataset> read = Dataset::Read(ro);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    return read->Shuffle({.seed = 5})
        .ParseExample({FeatureSpec{"image/encoded", pipeline::DType::kString, Shape()},
                       FeatureSpec{"label", pipeline::DType::kInt64, Shape()}});
  }

  static DecodeImageOptions Augment(OutputSpec spec = {}) {
    DecodeImageOptions o;
    o.ops = {RandomResizedCrop{16, 16}, RandomHorizontalFlip{},
             Normalize{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}};
    o.output_spec = spec;
    o.parallelism = 2;
    return o;
  }

  Dataset Decoded(DecodeImageOptions o, size_t batch = 4) {
    Result<Dataset> d = DecodeImage(Parsed(), std::move(o));
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d->Batch(batch);
  }

  // The image bytes of up to `max_batches` batches (default: to the end; 0 means none),
  // concatenated, plus the labels in order.
  static std::string DrainImages(Iterator* it, std::vector<int64_t>* labels = nullptr,
                                 size_t max_batches = SIZE_MAX) {
    std::string bytes;
    Element e;
    for (size_t n = 0; n < max_batches; ++n) {
      Result<bool> more = it->Next(&e);
      EXPECT_TRUE(more.ok()) << more.status().ToString();
      if (!more.ok() || !*more) break;
      bytes.append(e.tensors[0].raw_data(), e.tensors[0].nbytes());
      const int64_t* l = e.tensors[1].data<int64_t>();
      if (labels) labels->insert(labels->end(), l, l + e.tensors[1].num_elements());
    }
    return bytes;
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
  std::string shard_;
};

TEST_F(DecodeImageStage, BatchHasFixedShapeDtypeAndLayout) {
  WriteShard(false);
  struct Case {
    OutputSpec spec;
    pipeline::DType dtype;
    Shape shape;
  };
  for (const Case& c :
       {Case{{DType::kFloat32, Layout::kNCHW}, pipeline::DType::kFloat32, Shape{4, 3, 16, 16}},
        Case{{DType::kFloat16, Layout::kNHWC}, pipeline::DType::kFloat16, Shape{4, 16, 16, 3}}}) {
    Dataset ds = Decoded(Augment(c.spec));
    EXPECT_EQ(ds.schema()[0].dtype, c.dtype);
    EXPECT_EQ(ds.schema()[0].shape.WithoutFirst(), c.shape.WithoutFirst());
    auto it = MakeIt(ds, 2);
    Element e;
    ASSERT_TRUE(*it->Next(&e));
    EXPECT_EQ(e.tensors[0].dtype(), c.dtype);
    EXPECT_EQ(e.tensors[0].shape(), c.shape);
    EXPECT_EQ(ds.schema()[0].name, "image");
    EXPECT_EQ(ds.schema()[1].name, "label");
  }
}

TEST_F(DecodeImageStage, UInt8WithoutNormalizeKeepsPixelRange) {
  WriteShard(false);
  DecodeImageOptions o;
  o.ops = {Resize{20, 0, 0}, CenterCrop{12, 12}};
  o.output_spec = {DType::kUInt8, Layout::kNHWC};
  o.output = "pixels";
  o.keep_input = true;
  Result<Dataset> d = DecodeImage(Parsed(), o);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->schema().ToString(),
            "{image/encoded: string[], label: int64[], pixels: uint8[12, 12, 3]}");
  auto it = MakeIt(*d, 2);
  Element e;
  ASSERT_TRUE(*it->Next(&e));
  EXPECT_EQ(e.tensors[2].shape(), (Shape{12, 12, 3}));
  EXPECT_GT(e.tensors[0].string(0).size(), 100u);  // the encoded bytes are still there
}

TEST_F(DecodeImageStage, SameCropsForAnyThreadCount) {
  WriteShard(false);
  std::vector<int64_t> labels1, labels2;
  auto one = MakeIt(Decoded(Augment()), 1);
  std::string a = DrainImages(one.get(), &labels1);
  DecodeImageOptions wide = Augment();
  wide.parallelism = 4;
  auto two = MakeIt(Decoded(wide, 3), 2, /*autotune=*/true);
  std::string b = DrainImages(two.get(), &labels2);
  EXPECT_EQ(labels1, labels2);
  EXPECT_EQ(a.size(), size_t{kImages} * 3 * 16 * 16 * sizeof(float));
  EXPECT_TRUE(a == b) << "the crops or flips depend on the thread count";
}

TEST_F(DecodeImageStage, RandomCropsDifferBetweenEpochs) {
  WriteShard(false);
  pipeline::PipelineOptions po;
  po.threads = 2;
  std::string e0 = DrainImages(MakeIt(Decoded(Augment()), po).get());
  po.epoch = 1;
  std::string e1 = DrainImages(MakeIt(Decoded(Augment()), po).get());
  EXPECT_EQ(e0.size(), e1.size());
  EXPECT_NE(e0, e1);
}

TEST_F(DecodeImageStage, RestoreGivesIdenticalCrops) {
  WriteShard(false);
  Dataset ds = Decoded(Augment());
  std::vector<int64_t> all_labels;
  std::string all = DrainImages(MakeIt(ds, 2).get(), &all_labels);
  const size_t batch_bytes = 4 * 3 * 16 * 16 * sizeof(float);
  // Cut 0: a state saved before the first Next restores the whole stream (a reported "empty
  // stream" there was this helper treating max_batches = 0 as "all": it saved at the end).
  for (size_t cut : {size_t{0}, size_t{1}, size_t{3}, size_t{kImages / 4}}) {
    auto first = MakeIt(ds, 2);
    DrainImages(first.get(), nullptr, cut);
    Result<std::string> state = first->Save();
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    first.reset();
    auto resumed = MakeIt(ds, 1);
    ASSERT_TRUE(resumed->Restore(*state).ok());
    std::vector<int64_t> labels;
    std::string rest = DrainImages(resumed.get(), &labels);
    EXPECT_EQ(rest.size(), all.size() - cut * batch_bytes) << "after " << cut << " batches";
    EXPECT_TRUE(rest == all.substr(cut * batch_bytes)) << "after " << cut << " batches";
    EXPECT_EQ(labels, std::vector<int64_t>(all_labels.begin() + cut * 4, all_labels.end()));
  }
}

TEST_F(DecodeImageStage, TruncatedJpegRaisesNamingShardAndRecord) {
  WriteShard(true);
  DecodeImageOptions o = Augment();
  o.on_error = ErrorPolicy::kRaise;
  auto it = MakeIt(Decoded(o, 1), 2);
  int good = 0;
  Status s = StreamError(it.get(), [&](const Element&) { ++good; });
  EXPECT_LT(good, kImages);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("map:decode_image"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(shard_), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("record " + std::to_string(kTruncated)), std::string::npos)
      << s.ToString();
}

TEST_F(DecodeImageStage, TruncatedJpegIsSkippedUnderSkipPolicy) {
  WriteShard(true);
  DecodeImageOptions o = Augment();
  o.on_error = ErrorPolicy::kSkip;
  std::vector<int64_t> labels;
  auto it = MakeIt(Decoded(o, 5), 2);
  std::string bytes = DrainImages(it.get(), &labels);
  EXPECT_EQ(labels.size(), size_t{kImages - 1});
  EXPECT_EQ(std::count(labels.begin(), labels.end(), kTruncated), 0);
  EXPECT_EQ(bytes.size(), labels.size() * 3 * 16 * 16 * sizeof(float));
}

// decode_image under a batch writes into the batch buffer (map into slot); into_batch = false
// decodes into tensors of their own that batch copies. Both must give the same bytes, with
// and without a skipped image.
TEST_F(DecodeImageStage, DecodingIntoTheBatchEqualsDecodingThenCopying) {
  for (bool bad : {false, true}) {
    fs_ = io::NewMemoryFileSystem();
    WriteShard(bad);
    for (OutputSpec spec :
         {OutputSpec{DType::kFloat32, Layout::kNCHW}, OutputSpec{DType::kUInt8, Layout::kNHWC}}) {
      DecodeImageOptions o = Augment(spec);
      if (spec.dtype == DType::kUInt8) o.ops.pop_back();  // no Normalize into uint8
      o.on_error = ErrorPolicy::kSkip;
      Result<Dataset> decoded = DecodeImage(Parsed(), o);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      o.into_batch = false;
      Result<Dataset> unfused = DecodeImage(Parsed(), o);
      ASSERT_TRUE(unfused.ok()) << unfused.status().ToString();
      for (bool drop_remainder : {false, true}) {
        std::vector<int64_t> fused_labels, copied_labels;
        auto fused = MakeIt(decoded->Batch(5, drop_remainder), 2);
        auto copied = MakeIt(unfused->Batch(5, drop_remainder), 2);
        std::string a = DrainImages(fused.get(), &fused_labels);
        std::string b = DrainImages(copied.get(), &copied_labels);
        EXPECT_EQ(fused_labels, copied_labels);
        size_t good = bad ? kImages - 1 : kImages;
        EXPECT_EQ(fused_labels.size(), drop_remainder ? good / 5 * 5 : good);
        EXPECT_TRUE(a == b) << "decoding into the batch changed the images";
      }
    }
  }
}

TEST_F(DecodeImageStage, BadOptionsFailAtBuildTime) {
  WriteShard(false);
  DecodeImageOptions missing = Augment();
  missing.input = "image/png";
  EXPECT_EQ(DecodeImage(Parsed(), missing).status().code(), StatusCode::kNotFound);

  DecodeImageOptions clash = Augment();
  clash.output = "label";
  Result<Dataset> c = DecodeImage(Parsed(), clash);
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("'label' already exists"), std::string::npos);

  DecodeImageOptions not_bytes = Augment();
  not_bytes.input = "label";
  not_bytes.output = "image";
  EXPECT_EQ(DecodeImage(Parsed(), not_bytes).status().code(), StatusCode::kInvalidArgument);

  DecodeImageOptions normalize_uint8 = Augment({DType::kUInt8, Layout::kNCHW});
  Result<Dataset> n = DecodeImage(Parsed(), normalize_uint8);
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(n.status().message().find("decode_image"), std::string::npos);
}

}  // namespace
}  // namespace sluice::vision

// Save/Restore of decode_image pipelines (read -> shuffle -> parse_example -> decode_image
// [-> repeat] [-> batch] [-> prefetch]) in every shuffle mode: a state saved before the first
// Next, after a few elements, at the epoch boundary and at the end continues with exactly the
// uninterrupted stream, pixels included (the crops are random). A reported bug said a state
// saved before the first Next restored into an empty stream; these cases pin that down.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
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
using pipeline::FeatureSpec;
using pipeline::Iterator;
using pipeline::Shape;
using pipeline::ShuffleMode;
using pipeline::testing::MakeIt;

constexpr int kImages = 22;  // no batch size used here divides it
constexpr size_t kBatch = 4;

// What one element of the stream holds: its labels and image bytes.
struct Item {
  std::vector<int64_t> labels;
  std::string pixels;
  bool operator==(const Item& o) const { return labels == o.labels && pixels == o.pixels; }
};

// Up to `max` elements (default: to the end; 0 means none).
std::vector<Item> DrainItems(Iterator* it, size_t max = SIZE_MAX) {
  std::vector<Item> out;
  Element e;
  while (out.size() < max) {
    Result<bool> more = it->Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    Item item;
    item.pixels.assign(e.tensors[0].raw_data(), e.tensors[0].nbytes());
    const int64_t* l = e.tensors[1].data<int64_t>();
    item.labels.assign(l, l + e.tensors[1].num_elements());
    out.push_back(std::move(item));
  }
  return out;
}

// The stages after decode_image.
struct Tail {
  bool repeat;    // repeat(2)
  bool batch;     // batch(kBatch)
  bool prefetch;  // prefetch(3)
};

class DecodeImageState : public ::testing::TestWithParam<std::tuple<ShuffleMode, Tail>> {
 protected:
  // Several small shards of JPEGs labelled by their index (block mode shuffles shards).
  void SetUp() override {
    format::ShardWriterOptions wo;
    wo.target_shard_bytes = 3000;
    auto w = format::ShardWriter::Open(fs_.get(), "/ds", wo);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int i = 0; i < kImages; ++i) {
      format::ExampleBuilder b;
      b.AddBytes("image/encoded", testing::EncodeJpegRgb(24 + 2 * i, 20 + i % 4))
          .AddInt64s("label", {i});
      ASSERT_TRUE((*w)->Write(b.Serialize()).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
    ASSERT_GT((*w)->manifest().shards.size(), 2u);
  }

  Dataset Build(int prefetch_depth = 3) {
    auto [mode, tail] = GetParam();
    pipeline::ReadOptions ro;
    ro.fs = fs_.get();
    ro.paths = {"/ds"};
    Result<Dataset> read = Dataset::Read(ro);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    Dataset parsed =
        read->Shuffle({.mode = mode, .seed = 9, .block_shards = 2, .buffer_size = 5})
            .ParseExample({FeatureSpec{"image/encoded", pipeline::DType::kString, Shape()},
                           FeatureSpec{"label", pipeline::DType::kInt64, Shape()}});
    DecodeImageOptions o;
    o.ops = {RandomResizedCrop{8, 8}, RandomHorizontalFlip{}};
    o.output_spec = {DType::kUInt8, Layout::kNHWC};
    o.parallelism = 2;
    o.chunk_elements = 3;
    Result<Dataset> ds = DecodeImage(parsed, o);
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    if (tail.repeat) *ds = ds->Repeat(2);
    if (tail.batch) *ds = ds->Batch(kBatch);
    if (tail.prefetch) *ds = ds->Prefetch(prefetch_depth);
    return *ds;
  }

  size_t StreamElements() const {
    Tail tail = std::get<1>(GetParam());
    size_t samples = kImages * (tail.repeat ? 2 : 1);
    return tail.batch ? (samples + kBatch - 1) / kBatch : samples;
  }
  // Cuts around the end of the first epoch (with batch it falls inside a batch).
  std::vector<size_t> EpochBoundaryCuts() const {
    if (!std::get<1>(GetParam()).batch) return {kImages};
    return {kImages / kBatch, kImages / kBatch + 1};
  }

  std::unique_ptr<io::FileSystem> fs_ = io::NewMemoryFileSystem();
};

// Saves after `cut` elements of a fresh iterator, restores into a new iterator (other thread
// count and prefetch depth) and checks head + rest == the uninterrupted stream.
void ExpectResumesExactly(const std::vector<Item>& full, size_t cut, std::unique_ptr<Iterator> first,
                          std::unique_ptr<Iterator> resumed) {
  SCOPED_TRACE("saved after " + std::to_string(cut) + " of " + std::to_string(full.size()));
  std::vector<Item> head = DrainItems(first.get(), cut);
  ASSERT_EQ(head.size(), cut);
  Result<std::string> state = first->Save();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  first.reset();
  Status restored = resumed->Restore(*state);
  ASSERT_TRUE(restored.ok()) << restored.ToString();
  std::vector<Item> rest = DrainItems(resumed.get());
  ASSERT_EQ(rest.size(), full.size() - cut) << "the restored stream is short";
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), full.begin() + static_cast<ptrdiff_t>(cut)))
      << "the restored stream differs (order, labels or crops)";
}

TEST_P(DecodeImageState, StateSavedBeforeFirstNextRestoresTheWholeStream) {
  std::vector<Item> full = DrainItems(MakeIt(Build(), 2).get());
  ASSERT_FALSE(full.empty());
  ExpectResumesExactly(full, 0, MakeIt(Build(), 2), MakeIt(Build(5), 1));
  // The same through a fresh iterator that never ran: Save() straight after MakeIterator.
  auto never_ran = MakeIt(Build(), 2);
  Result<std::string> state = never_ran->Save();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  auto resumed = MakeIt(Build(), 2);
  ASSERT_TRUE(resumed->Restore(*state).ok());
  EXPECT_TRUE(DrainItems(resumed.get()) == full) << "restored from a never-started iterator";
}

TEST_P(DecodeImageState, StateSavedAfterAFewElementsRestoresTheRest) {
  std::vector<Item> full = DrainItems(MakeIt(Build(), 2).get());
  for (size_t cut : {size_t{1}, size_t{3}}) {
    ExpectResumesExactly(full, cut, MakeIt(Build(), 2), MakeIt(Build(5), 1));
  }
}

TEST_P(DecodeImageState, StateSavedAtTheEpochBoundaryAndTheEndRestores) {
  std::vector<Item> full = DrainItems(MakeIt(Build(), 2).get());
  ASSERT_EQ(full.size(), StreamElements());
  std::vector<size_t> cuts = EpochBoundaryCuts();
  cuts.push_back(full.size());
  for (size_t cut : cuts) {
    ExpectResumesExactly(full, cut, MakeIt(Build(), 2), MakeIt(Build(5), 1));
  }
}

TEST_P(DecodeImageState, RestoreOfAStartStateRewindsAUsedIterator) {
  std::vector<Item> full = DrainItems(MakeIt(Build(), 2).get());
  auto it = MakeIt(Build(), 2);
  Result<std::string> start = it->Save();
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  DrainItems(it.get(), 2);
  ASSERT_TRUE(it->Restore(*start).ok());
  EXPECT_TRUE(DrainItems(it.get()) == full);
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<ShuffleMode, Tail>>& info) {
  auto [mode, tail] = info.param;
  return std::string(pipeline::ShuffleModeName(mode)) + (tail.repeat ? "_Repeat" : "") +
         (tail.batch ? "_Batch" : "") + (tail.prefetch ? "_Prefetch" : "");
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, DecodeImageState,
    ::testing::Combine(::testing::Values(ShuffleMode::kNone, ShuffleMode::kGlobal,
                                         ShuffleMode::kBlock, ShuffleMode::kBuffer),
                       ::testing::Values(Tail{false, false, false}, Tail{false, true, false},
                                         Tail{false, true, true}, Tail{true, true, true},
                                         Tail{true, false, true})),
    CaseName);

}  // namespace
}  // namespace sluice::vision

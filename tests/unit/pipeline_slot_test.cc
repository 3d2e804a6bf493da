// Map into slot (docs/pipeline.md): a map with MapOptions::slot_feature under a batch writes
// that feature straight into the batch buffer. The stream must be exactly the unfused one
// (order, values, drops, remainders, restores), and batches must really be assembled in place.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "pipeline_test_util.h"

namespace sluice::pipeline {
namespace {

using testing::Ids;
using testing::MakeIt;
using testing::StreamError;

constexpr int64_t kWidth = 5;  // floats per slot: 20 bytes, so slots are not 64-byte aligned

// record -> {id: int64[], value: float32[kWidth]} with value = id + epoch / 10 + the sample's
// first random draw; fails with DataLoss on the ids in `bad`. Remembers where each value was
// written, so tests can tell whether batch took it in place.
class SlotMap {
 public:
  explicit SlotMap(std::set<int64_t> bad = {}) : bad_(std::move(bad)) {}

  MapOptions Options(bool slots, int parallelism = 2) const {
    MapOptions o;
    o.name = "slot";
    o.parallelism = parallelism;
    o.chunk_elements = 3;
    o.output_schema = Schema({FeatureInfo{"id", DType::kInt64, Shape()},
                              FeatureInfo{"value", DType::kFloat32, Shape{kWidth}}});
    if (slots) o.slot_feature = "value";
    return o;
  }

  MapFn Fn() {
    return [this](Element* e, const MapContext& ctx) -> Status {
      int64_t id = std::stoll(std::string(e->tensors[0].string(0)));
      e->tensors.resize(2);
      e->tensors[0].ResizeDense(DType::kInt64, Shape(), ctx.pool());
      *e->tensors[0].data<int64_t>() = id;
      Tensor& v = e->tensors[1];
      if (!ctx.TakeSlot(&v)) v.ResizeDense(DType::kFloat32, Shape{kWidth}, ctx.pool());
      SampleRng rng = ctx.rng();
      float x = static_cast<float>(id) + static_cast<float>(ctx.record().epoch) / 10 +
                static_cast<float>(rng.NextDouble());
      for (int64_t i = 0; i < kWidth; ++i) v.data<float>()[i] = x;
      {
        std::lock_guard<std::mutex> l(mu_);
        written_[Key(ctx.record().epoch, id)] = v.raw_data();
      }
      if (bad_.count(id)) return DataLoss("bad record " + std::to_string(id));
      return Status::OK();
    };
  }

  // Whether batch `e` holds every value where the map wrote it.
  bool InPlace(const Element& e) const {
    std::lock_guard<std::mutex> l(mu_);
    const Tensor& ids = e.tensors[0];
    for (int64_t i = 0; i < ids.num_elements(); ++i) {
      auto it = written_.find(Key(e.id.epoch, ids.data<int64_t>()[i]));
      const char* at = e.tensors[1].raw_data() + i * kWidth * sizeof(float);
      if (it == written_.end() || it->second != at) return false;
    }
    return true;
  }

 private:
  static int64_t Key(uint64_t epoch, int64_t id) { return static_cast<int64_t>(epoch) << 32 | id; }
  std::set<int64_t> bad_;
  mutable std::mutex mu_;
  std::map<int64_t, const char*> written_;  // guarded by mu_
};

struct Stream {
  std::vector<std::vector<int64_t>> ids;  // per batch
  std::string values;                     // all batches' value bytes
  size_t in_place = 0;                    // batches assembled without a copy
};

Stream Drain(Iterator* it, const SlotMap& map, size_t max_batches = SIZE_MAX) {
  Stream s;
  Element e;
  for (size_t n = 0; n < max_batches; ++n) {
    Result<bool> more = it->Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    s.ids.push_back(testing::IdsOf(e));
    s.values.append(e.tensors[1].raw_data(), e.tensors[1].nbytes());
    s.in_place += map.InPlace(e);
  }
  return s;
}

// read (shuffled) -> map -> `between` -> batch(batch, drop_remainder)
using Between = std::function<Dataset(const Dataset&)>;
Dataset Build(SlotMap* map, bool slots, size_t batch, bool drop_remainder = false,
              const Between& between = nullptr, uint64_t records = 50) {
  Dataset ds = Ids({records / 2, records - records / 2}).Shuffle({.seed = 3});
  ds = ds.Map(map->Fn(), map->Options(slots));
  if (between) ds = between(ds);
  return ds.Batch(batch, drop_remainder);
}

PipelineOptions Threads(uint32_t threads, ErrorPolicy policy = ErrorPolicy::kRaise) {
  PipelineOptions o;
  o.threads = threads;
  o.autotune = false;
  o.on_error = policy;
  return o;
}

void ExpectSameStream(const Stream& fused, const Stream& plain) {
  EXPECT_EQ(fused.ids, plain.ids);
  EXPECT_TRUE(fused.values == plain.values) << "the values differ from the unfused pipeline";
}

TEST(PipelineSlot, BatchesAreAssembledInPlaceAndEqualTheUnfusedStream) {
  for (uint32_t threads : {1u, 2u, 4u}) {
    SlotMap fused_map, plain_map;
    auto fused = MakeIt(Build(&fused_map, true, 8), Threads(threads));
    auto plain = MakeIt(Build(&plain_map, false, 8), Threads(threads));
    Stream f = Drain(fused.get(), fused_map);
    Stream p = Drain(plain.get(), plain_map);
    ExpectSameStream(f, p);
    ASSERT_EQ(f.ids.size(), 7u);  // 6 full batches and the remainder of 2
    EXPECT_EQ(f.in_place, f.ids.size()) << threads << " threads: a batch was copied";
    EXPECT_EQ(p.in_place, 0u);
  }
}

TEST(PipelineSlot, MapOnTheConsumersThreadStillWritesInPlace) {
  SlotMap map;
  Dataset ds = Ids({20})
                   .Map(map.Fn(),
                        [&] {
                          MapOptions o = map.Options(true, 0);
                          return o;
                        }())
                   .Batch(6);
  auto it = MakeIt(ds, Threads(1));
  Stream s = Drain(it.get(), map);
  EXPECT_EQ(s.ids.size(), 4u);
  EXPECT_EQ(s.in_place, 4u);
}

TEST(PipelineSlot, SkippedBadElementLeavesNoHole) {
  const std::set<int64_t> bad = {0, 7, 8, 30, 49};
  for (bool drop_remainder : {false, true}) {
    for (uint32_t threads : {1u, 2u}) {
      SlotMap fused_map(bad), plain_map(bad);
      auto fused = MakeIt(Build(&fused_map, true, 4, drop_remainder, nullptr, 300),
                          Threads(threads, ErrorPolicy::kSkip));
      auto plain = MakeIt(Build(&plain_map, false, 4, drop_remainder, nullptr, 300),
                          Threads(threads, ErrorPolicy::kSkip));
      Stream f = Drain(fused.get(), fused_map);
      Stream p = Drain(plain.get(), plain_map);
      ExpectSameStream(f, p);
      // 295 good elements: 73 full batches, and 3 left over unless dropped.
      EXPECT_EQ(f.ids.size(), drop_remainder ? 73u : 74u);
      for (const auto& b : f.ids) {
        for (int64_t id : b) EXPECT_EQ(bad.count(id), 0u) << "bad element " << id << " delivered";
      }
      // After each drop the elements in flight (at most the map's window: 4 chunks of 3) are
      // one slot off, then the claims are back in step: 4 drop events cost at most ~16
      // copied batches.
      EXPECT_GE(f.in_place, f.ids.size() / 2) << "never back in place after a skip";
    }
  }
}

TEST(PipelineSlot, RaisedErrorNamesTheRecordAsWithoutSlots) {
  SlotMap map({11});
  auto it = MakeIt(Build(&map, true, 4), Threads(2));
  Status s = StreamError(it.get());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("map:slot"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("bad record 11"), std::string::npos) << s.ToString();
}

TEST(PipelineSlot, DropOnlyStagesBetweenMapAndBatchKeepTheStream) {
  const Between between = [](const Dataset& d) {
    return d.Repeat(2)
        .Skip(3)
        .Filter([](const Element& e, const MapContext&) -> Result<bool> {
          return *e.tensors[0].data<int64_t>() % 97 != 1;
        })
        .Take(300)
        .Prefetch(2);
  };
  for (uint32_t threads : {1u, 2u}) {
    SlotMap fused_map, plain_map;
    auto fused = MakeIt(Build(&fused_map, true, 8, false, between, 200), Threads(threads));
    auto plain = MakeIt(Build(&plain_map, false, 8, false, between, 200), Threads(threads));
    Stream f = Drain(fused.get(), fused_map);
    Stream p = Drain(plain.get(), plain_map);
    ExpectSameStream(f, p);
    ASSERT_EQ(f.ids.size(), 38u);  // 300 elements
    // Lag events (the skip, 6 filtered elements) each cost the batches of the elements then in
    // flight: how many depends on timing (9-17 of 38 in place seen over 60 runs, ASan
    // included), so the bound only tells "back in place after lags" from "never in place".
    EXPECT_GE(f.in_place, 4u) << threads << " threads: stages between map and batch prevent "
                              << "in-place batches";
  }
}

TEST(PipelineSlot, OtherStagesBetweenMapAndBatchCopyAsBefore) {
  SlotMap map;
  const Between identity = [](const Dataset& d) {
    return d.Map([](Element*, const MapContext&) { return Status::OK(); });
  };
  auto it = MakeIt(Build(&map, true, 8, false, identity), Threads(2));
  Stream s = Drain(it.get(), map);
  EXPECT_EQ(s.ids.size(), 7u);
  EXPECT_EQ(s.in_place, 0u);
}

TEST(PipelineSlot, RestoreAtEveryBatchGivesTheUninterruptedStream) {
  SlotMap map({9});
  Dataset ds = Build(&map, true, 4, false, [](const Dataset& d) { return d.Repeat(2); });
  auto whole = MakeIt(ds, Threads(2, ErrorPolicy::kSkip));
  Stream all = Drain(whole.get(), map);
  ASSERT_EQ(all.ids.size(), 25u);  // 98 good elements
  const size_t batch_bytes = 4 * kWidth * sizeof(float);
  for (size_t cut = 0; cut <= all.ids.size(); ++cut) {
    auto first = MakeIt(ds, Threads(2, ErrorPolicy::kSkip));
    Drain(first.get(), map, cut);
    Result<std::string> state = first->Save();
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    first.reset();
    auto resumed = MakeIt(ds, Threads(1 + cut % 3, ErrorPolicy::kSkip));
    ASSERT_TRUE(resumed->Restore(*state).ok());
    Stream rest = Drain(resumed.get(), map);
    EXPECT_EQ(rest.ids, std::vector<std::vector<int64_t>>(all.ids.begin() + cut, all.ids.end()))
        << "after " << cut << " batches";
    EXPECT_TRUE(rest.values == all.values.substr(std::min(all.values.size(), cut * batch_bytes)))
        << "after " << cut << " batches";
  }
}

TEST(PipelineSlot, MemoryAccountingAndStatsCountTheSlotsInTheMap) {
  SlotMap fused_map, plain_map;
  auto fused = MakeIt(Build(&fused_map, true, 8), Threads(2));
  auto plain = MakeIt(Build(&plain_map, false, 8), Threads(2));
  Drain(fused.get(), fused_map);
  Drain(plain.get(), plain_map);
  PipelineStats f = fused->stats(), p = plain->stats();
  ASSERT_EQ(f.stages.size(), p.stages.size());
  const StageStats& fm = f.stages[1];
  EXPECT_EQ(fm.name, "map:slot");
  EXPECT_EQ(fm.elements, 50u);
  EXPECT_EQ(fm.bytes, p.stages[1].bytes) << "the map's bytes must count its slots";
  // The map's chunks are charged with their slots' bytes (at least one chunk of 3 slots).
  EXPECT_GE(f.memory_peak_bytes, 3 * kWidth * sizeof(float));
}

TEST(PipelineSlot, SlotFeatureMustBeDenseWithAFixedShape) {
  MapOptions o;
  o.output_schema = Schema({FeatureInfo{"v", DType::kFloat32, Shape{-1}}});
  o.slot_feature = "v";
  Dataset bad = Ids({4}).Map([](Element*, const MapContext&) { return Status::OK(); }, o);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  o.slot_feature = "missing";
  Dataset missing = Ids({4}).Map([](Element*, const MapContext&) { return Status::OK(); }, o);
  EXPECT_FALSE(missing.status().ok());
}

}  // namespace
}  // namespace sluice::pipeline

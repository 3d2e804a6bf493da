// Stage behaviour: read order, batch/padded_batch/bucket stacking, filter, take/skip, repeat,
// and the graph errors Dataset reports.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "pipeline_test_util.h"

namespace sluice::pipeline {
namespace {

using testing::Drain;
using testing::IdMap;
using testing::Ids;
using testing::MakeIt;
using testing::ParseId;

std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(PipelineRead, UnshuffledReadIsShardOrder) {
  auto it = MakeIt(Ids({3, 0, 5, 2}), 2);
  EXPECT_EQ(Drain(it.get()), Range(10));
}

TEST(PipelineRead, EmptyDatasetEndsAtOnce) {
  auto it = MakeIt(Ids({0, 0}).Shuffle({}).Repeat(), 2);
  EXPECT_TRUE(Drain(it.get()).empty());
}

TEST(PipelineRead, GlobalShuffleIsAPermutationPerEpochAndEpochsDiffer) {
  auto it = MakeIt(Ids({40, 60}).Shuffle({.seed = 3}).Repeat(2), 2);
  std::vector<int64_t> all = Drain(it.get());
  ASSERT_EQ(all.size(), 200u);
  std::vector<int64_t> e0(all.begin(), all.begin() + 100), e1(all.begin() + 100, all.end());
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, Range(100));
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e0, Range(100));
  EXPECT_EQ(e1, Range(100));
}

TEST(PipelineBatch, StacksDenseFeaturesIntoOneBufferAndKeepsRemainder) {
  auto it = MakeIt(Ids({10}).Map(ParseId, IdMap()).Batch(4), 2);
  Element e;
  std::vector<std::vector<int64_t>> batches;
  while (*it->Next(&e)) {
    EXPECT_EQ(e.tensors[0].shape().rank(), 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(e.tensors[0].raw_data()) % kBufferAlignment, 0u);
    batches.push_back(testing::IdsOf(e));
  }
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(batches[2], (std::vector<int64_t>{8, 9}));
}

TEST(PipelineBatch, DropRemainderDropsThePartialBatch) {
  auto it = MakeIt(Ids({10}).Map(ParseId, IdMap()).Batch(4, true), 2);
  EXPECT_EQ(Drain(it.get()).size(), 8u);
  EXPECT_EQ(it->schema()[0].shape, Shape({4}));
}

TEST(PipelineBatch, StacksStringsAsOffsetsAndValues) {
  auto it = MakeIt(Ids({5}).Batch(3), 1);
  Element e;
  ASSERT_TRUE(*it->Next(&e));
  const Tensor& t = e.tensors[0];
  ASSERT_TRUE(t.is_string());
  EXPECT_EQ(t.shape(), Shape({3}));
  EXPECT_EQ(t.offsets()[0], 0u);
  EXPECT_EQ(t.offsets()[3], 3u);
  EXPECT_EQ(t.string(2), "2");
  EXPECT_EQ(std::string(t.values(), t.nbytes()), "012");
}

TEST(PipelineBatch, ShapeMismatchNamesFeatureAndRecords) {
  auto ragged = [](Element* e, const MapContext& ctx) -> Status {
    int64_t id = std::stoll(std::string(e->tensors[0].string(0)));
    e->tensors[0].ResizeDense(DType::kInt32, Shape{id + 1}, ctx.pool());
    return Status::OK();
  };
  MapOptions mo;
  mo.output_schema = Schema({FeatureInfo{"seq", DType::kInt32, Shape{-1}}});
  auto it = MakeIt(Ids({4}).Map(ragged, mo).Batch(2), 1);
  Element e;
  Result<bool> r = it->Next(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("feature 'seq'"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("padded_batch"), std::string::npos);
  EXPECT_NE(r.status().message().find("record 1"), std::string::npos);
}

// Element i: "seq" = int32 [i % 4 + 1] filled with i, "name" = "n<i>".
Dataset Ragged(uint64_t n) {
  auto fn = [](Element* e, const MapContext& ctx) -> Status {
    int64_t id = std::stoll(std::string(e->tensors[0].string(0)));
    std::string name = "n" + std::to_string(id);
    e->tensors.resize(2);
    e->tensors[0].ResizeDense(DType::kInt32, Shape{id % 4 + 1}, ctx.pool());
    std::fill_n(e->tensors[0].data<int32_t>(), id % 4 + 1, static_cast<int32_t>(id));
    e->tensors[1].SetScalarString(name, ctx.pool());
    return Status::OK();
  };
  MapOptions mo;
  mo.output_schema = Schema(
      {FeatureInfo{"seq", DType::kInt32, Shape{-1}}, FeatureInfo{"name", DType::kString, Shape()}});
  return Ids({n}).Map(fn, mo);
}

TEST(PipelinePaddedBatch, PadsToLongestRoundedUpAndMasks) {
  PaddedBatchOptions o;
  o.batch_size = 3;
  o.padding.pad_to_multiple_of = 4;
  o.padding.pad_values["seq"] = -1;
  auto it = MakeIt(Ragged(3).PaddedBatch(o), 1);
  ASSERT_EQ(it->schema().size(), 3u);
  EXPECT_EQ(it->schema()[2].name, "seq_mask");
  Element e;
  ASSERT_TRUE(*it->Next(&e));
  const Tensor& seq = e.tensors[0];
  EXPECT_EQ(seq.shape(), Shape({3, 4}));  // longest is 3, rounded up to 4
  std::vector<int32_t> got(seq.data<int32_t>(), seq.data<int32_t>() + 12);
  EXPECT_EQ(got, (std::vector<int32_t>{0, -1, -1, -1, 1, 1, -1, -1, 2, 2, 2, -1}));
  const Tensor& mask = e.tensors[2];
  std::vector<uint8_t> m(mask.data<uint8_t>(), mask.data<uint8_t>() + 12);
  EXPECT_EQ(m, (std::vector<uint8_t>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(e.tensors[1].string(1), "n1");
}

TEST(PipelinePaddedBatch, UnknownPadValueFeatureIsRejected) {
  PaddedBatchOptions o;
  o.padding.pad_values["nope"] = 1;
  Dataset ds = Ragged(3).PaddedBatch(o);
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ds.MakeIterator().ok());
}

TEST(PipelinePaddedBatch, LeftPaddingEndsTheDataAtTheLastPosition) {
  PaddedBatchOptions o;
  o.batch_size = 3;
  o.padding.pad_values["seq"] = -1;
  o.padding.side = PaddingOptions::Side::kLeft;
  auto it = MakeIt(Ragged(3).PaddedBatch(o), 1);
  Element e;
  ASSERT_TRUE(*it->Next(&e));
  const Tensor& seq = e.tensors[0];
  ASSERT_EQ(seq.shape(), Shape({3, 3}));
  std::vector<int32_t> got(seq.data<int32_t>(), seq.data<int32_t>() + 9);
  EXPECT_EQ(got, (std::vector<int32_t>{-1, -1, 0, -1, 1, 1, 2, 2, 2}));
  const Tensor& mask = e.tensors[2];
  std::vector<uint8_t> m(mask.data<uint8_t>(), mask.data<uint8_t>() + 9);
  EXPECT_EQ(m, (std::vector<uint8_t>{0, 0, 1, 0, 1, 1, 1, 1, 1}));
}

// Element i: "grid" = int32 [i % 3 + 1, 2] holding 10 * i + j, "words" = strings [i % 3 + 1].
Dataset Grids(uint64_t n) {
  auto fn = [](Element* e, const MapContext& ctx) -> Status {
    int64_t id = std::stoll(std::string(e->tensors[0].string(0)));
    const int64_t rows = id % 3 + 1;
    e->tensors.resize(2);
    e->tensors[0].ResizeDense(DType::kInt32, Shape{rows, 2}, ctx.pool());
    for (int64_t j = 0; j < rows * 2; ++j) e->tensors[0].data<int32_t>()[j] = int32_t(10 * id + j);
    std::string values;
    for (int64_t j = 0; j < rows; ++j) values += static_cast<char>('a' + j);
    e->tensors[1].ResizeStrings(Shape{rows}, values.size(), ctx.pool());
    for (int64_t j = 0; j <= rows; ++j) e->tensors[1].mutable_offsets()[j] = uint64_t(j);
    std::memcpy(e->tensors[1].mutable_values(), values.data(), values.size());
    return Status::OK();
  };
  MapOptions mo;
  mo.output_schema = Schema({FeatureInfo{"grid", DType::kInt32, Shape{-1, 2}},
                             FeatureInfo{"words", DType::kString, Shape{-1}}});
  return Ids({n}).Map(fn, mo);
}

TEST(PipelinePaddedBatch, LeftPaddingShiftsOnlyTheFirstDimension) {
  PaddedBatchOptions o;
  o.batch_size = 2;
  o.padding.side = PaddingOptions::Side::kLeft;
  o.padding.pad_values["grid"] = -1;
  auto it = MakeIt(Grids(2).PaddedBatch(o), 1);
  Element e;
  ASSERT_TRUE(*it->Next(&e));
  const Tensor& grid = e.tensors[0];
  ASSERT_EQ(grid.shape(), Shape({2, 2, 2}));
  std::vector<int32_t> got(grid.data<int32_t>(), grid.data<int32_t>() + 8);
  EXPECT_EQ(got, (std::vector<int32_t>{-1, -1, 0, 1, 10, 11, 12, 13}));
  const Tensor& words = e.tensors[1];
  ASSERT_EQ(words.shape(), Shape({2, 2}));
  EXPECT_EQ(words.string(0), "");  // padding
  EXPECT_EQ(words.string(1), "a");
  EXPECT_EQ(words.string(2), "a");
  EXPECT_EQ(words.string(3), "b");
}

TEST(PipelinePaddedBatch, FixedLengthsGiveStaticShapes) {
  PaddedBatchOptions o;
  o.batch_size = 2;
  o.drop_remainder = true;
  o.padding.lengths["seq"] = 6;
  o.padding.pad_to_multiple_of = 4;  // does not round a fixed length
  auto it = MakeIt(Ragged(4).PaddedBatch(o), 1);
  EXPECT_EQ(it->schema()[0].shape, Shape({2, 6}));
  EXPECT_EQ(it->schema()[2].shape, Shape({2, 6}));  // seq_mask
  Element e;
  ASSERT_TRUE(*it->Next(&e));
  EXPECT_EQ(e.tensors[0].shape(), Shape({2, 6}));
  std::vector<int32_t> got(e.tensors[0].data<int32_t>(), e.tensors[0].data<int32_t>() + 12);
  EXPECT_EQ(got, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(e.tensors[2].shape(), Shape({2, 6}));
}

TEST(PipelinePaddedBatch, AnElementLongerThanItsFixedLengthIsAnErrorNamingIt) {
  PaddedBatchOptions o;
  o.batch_size = 4;
  o.padding.lengths["seq"] = 3;  // element 3 has 4 values
  auto it = MakeIt(Ragged(4).PaddedBatch(o), 1);
  Element e;
  Result<bool> r = it->Next(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("feature 'seq' has length 4, more than its fixed length 3"),
            std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("record 3"), std::string::npos) << r.status().ToString();
}

TEST(PipelinePaddedBatch, FixedLengthsAreChecked) {
  for (auto [name, length] :
       std::vector<std::pair<std::string, int64_t>>{{"nope", 4}, {"name", 4}, {"seq", 0}}) {
    PaddedBatchOptions o;
    o.padding.lengths[name] = length;
    Dataset ds = Ragged(3).PaddedBatch(o);
    EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument) << name;
  }
}

TEST(PipelineBucket, GroupsByLengthAndFlushesPartialBuckets) {
  BucketOptions o;
  o.length_feature = "seq";
  o.boundaries = {3};  // lengths 1,2 -> bucket 0; 3,4 -> bucket 1
  o.batch_sizes = {2, 3};
  auto it = MakeIt(Ragged(12).BucketByLength(o), 1);
  Element e;
  std::multiset<int64_t> seen;
  size_t batches = 0;
  while (*it->Next(&e)) {
    ++batches;
    const Tensor& seq = e.tensors[0];
    int64_t width = seq.shape()[1];
    for (int64_t i = 0; i < seq.shape()[0]; ++i) {
      int32_t id = seq.data<int32_t>()[i * width];
      seen.insert(id);
      EXPECT_EQ(id % 4 + 1 <= 2, width <= 2)
          << "element " << id << " in a batch of width " << width;
    }
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(batches, 3u + 2u);  // 6 short -> 3 batches of 2; 6 long -> 2 batches of 3
}

TEST(PipelineFilter, DropsRejectedElementsInOrder) {
  auto even = [](const Element& e, const MapContext&) -> Result<bool> {
    return e.tensors[0].data<int64_t>()[0] % 2 == 0;
  };
  auto it = MakeIt(Ids({7, 8}).Map(ParseId, IdMap(2)).Filter(even), 2);
  EXPECT_EQ(Drain(it.get()), (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14}));
}

TEST(PipelineTakeSkip, TakeAndSkipCountElements) {
  auto it = MakeIt(Ids({20}).Skip(5).Take(4), 2);
  EXPECT_EQ(Drain(it.get()), (std::vector<int64_t>{5, 6, 7, 8}));
  auto none = MakeIt(Ids({3}).Skip(10), 2);
  EXPECT_TRUE(Drain(none.get()).empty());
}

TEST(PipelineRepeat, RepeatsTheGivenNumberOfEpochs) {
  auto it = MakeIt(Ids({3}).Repeat(3), 1);
  EXPECT_EQ(Drain(it.get()), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(PipelineMap, PerSampleRngDependsOnSeedEpochAndPositionOnly) {
  auto draw = [](Element* e, const MapContext& ctx) -> Status {
    e->tensors.resize(1);
    e->tensors[0].ResizeDense(DType::kInt64, Shape(), ctx.pool());
    *e->tensors[0].data<int64_t>() = static_cast<int64_t>(ctx.rng().NextU64() >> 1);
    return Status::OK();
  };
  MapOptions mo = IdMap(3);
  auto run = [&](uint32_t threads, uint32_t rank, uint32_t world) {
    auto it = MakeIt(Ids({50}).Shuffle({.seed = 9}).Shard(rank, world).Map(draw, mo), threads);
    return Drain(it.get());
  };
  std::vector<int64_t> one = run(1, 0, 1);
  EXPECT_EQ(one, run(4, 0, 1));
  std::vector<int64_t> r1 = run(2, 1, 2);  // rank 1 of 2 sees positions 1, 3, 5, ...
  for (size_t k = 0; k < r1.size(); ++k) EXPECT_EQ(r1[k], one[2 * k + 1]);
}

TEST(PipelineGraph, ShuffleAfterMapIsRejected) {
  Dataset ds = Ids({4}).Map(ParseId, IdMap()).Shuffle({});
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ds.status().message().find("directly after read"), std::string::npos);
}

TEST(PipelineGraph, ShardRankOutsideWorldIsRejected) {
  EXPECT_FALSE(Ids({4}).Shard(2, 2).status().ok());
  EXPECT_FALSE(Ids({4}).Shard(0, 0).status().ok());
}

TEST(PipelineTensor, PoolReusesBuffersAndKeepsSharedOnesAlive) {
  auto pool = BufferPool::Create();
  Tensor t;
  t.ResizeDense(DType::kFloat32, Shape{100}, pool.get());
  const char* first = t.raw_data();
  t.ResizeDense(DType::kFloat32, Shape{50}, pool.get());  // unique and big enough: in place
  EXPECT_EQ(t.raw_data(), first);
  BufferRef held = t.buffer();  // like numpy holding a batch
  t.ResizeDense(DType::kFloat32, Shape{100}, pool.get());
  EXPECT_NE(t.raw_data(), first);  // shared: not overwritten
  std::memset(held.data(), 7, 400);
  EXPECT_EQ(held.data()[399], 7);
  uint64_t fresh = pool->allocations();
  held.reset();  // back to the pool
  Tensor u;
  u.ResizeDense(DType::kUInt8, Shape{300}, pool.get());
  EXPECT_EQ(pool->allocations(), fresh);  // served from the free list
}

TEST(PipelineTensor, PoolClassesFitLargeRequestsWithinAQuarter) {
  auto pool = BufferPool::Create();
  const size_t batch = size_t{256} * 3 * 224 * 224 * 4;  // 154 MB: float32 ImageNet batch
  for (size_t bytes : {size_t{1}, size_t{64}, size_t{65}, size_t{65536}, size_t{65537},
                       size_t{100000}, size_t{1} << 20, (size_t{1} << 20) + 1, batch}) {
    BufferRef b = pool->Allocate(bytes);
    EXPECT_GE(b.capacity(), bytes);
    if (bytes > 65536) {
      EXPECT_LE(b.capacity(), bytes + bytes / 4) << bytes;
    }
    EXPECT_EQ(b.capacity() % 64, 0u) << bytes;
  }
  // Sizes inside one class share recycled buffers; the next class does not take them.
  uint64_t fresh = pool->allocations();
  pool->Allocate(batch - 1000);
  EXPECT_EQ(pool->allocations(), fresh);
  pool->Allocate(batch + batch / 4);
  EXPECT_EQ(pool->allocations(), fresh + 1);
}

TEST(PipelineTensor, PoolRecyclesBatchBuffersNextToSmallOnes) {
  // A 154 MB batch buffer cycling through a pool with a 256 MB limit while a small buffer
  // sits in the free list: recycled every time. (As a 256 MB power-of-two class it did not
  // fit next to the small one, so every batch was a fresh allocation, page faults and all.)
  auto pool = BufferPool::Create(size_t{256} << 20);
  pool->Allocate(size_t{1} << 20);  // released at once: kept in the free list
  const size_t batch = size_t{256} * 3 * 224 * 224 * 4;
  std::vector<BufferRef> live;  // the consumer's batch and the one being built
  for (int round = 0; round < 20; ++round) {
    live.push_back(pool->Allocate(batch));
    if (live.size() > 2) live.erase(live.begin());
  }
  EXPECT_EQ(pool->allocations(), 1u + 3u);
  EXPECT_EQ(pool->retained_bytes(), (size_t{1} << 20) + live[0].capacity());  // one spare
}

TEST(PipelineTensor, BuffersOutliveTheirPool) {
  BufferRef ref;
  {
    auto pool = BufferPool::Create();
    ref = pool->Allocate(1000);
  }
  std::memset(ref.data(), 1, 1000);  // ASan checks this is still valid memory
  EXPECT_GE(ref.capacity(), 1000u);
}

}  // namespace
}  // namespace sluice::pipeline

// Helpers of the pipeline tests: in-memory datasets whose records are their own global ids,
// a map that turns records into an int64 "id" tensor, and draining iterators.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/forwarding_source.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::pipeline::testing {

// `shards[i]` records in shard i; record payload = decimal global id ("0", "1", ...). Chunks
// (chunks mode) of up to 24 bytes: ~10 records each, so small tests have many chunks.
inline std::shared_ptr<RecordSource> IdSource(const std::vector<uint64_t>& shards) {
  std::vector<std::vector<std::string>> data;
  uint64_t id = 0;
  for (uint64_t n : shards) {
    data.emplace_back();
    for (uint64_t i = 0; i < n; ++i) data.back().push_back(std::to_string(id++));
  }
  return NewMemorySource(std::move(data), /*chunk_bytes=*/24);
}

// The codecs a parameterized pipeline test runs over, named by codec in test names:
// INSTANTIATE_TEST_SUITE_P(Codecs, Suite, AllCodecs(), CodecTestName).
inline auto AllCodecs() {
  return ::testing::Values(format::Codec::kZstd, format::Codec::kGzip, format::Codec::kNone);
}
inline std::string CodecTestName(const ::testing::TestParamInfo<format::Codec>& info) {
  return std::string(format::CodecName(info.param));
}

inline Schema IdSchema() { return Schema({FeatureInfo{"id", DType::kInt64, Shape()}}); }

// record (decimal string) -> {id: int64 scalar}
inline Status ParseId(Element* e, const MapContext& ctx) {
  ByteView s = e->tensors[0].string(0);
  int64_t v = std::stoll(std::string(s));
  e->tensors.resize(1);
  e->tensors[0].ResizeDense(DType::kInt64, Shape(), ctx.pool());
  *e->tensors[0].data<int64_t>() = v;
  return Status::OK();
}

inline MapOptions IdMap(int parallelism = kAutotune) {
  MapOptions o;
  o.name = "parse_id";
  o.parallelism = parallelism;
  o.output_schema = IdSchema();
  return o;
}

// A read of `shards` mapped to ids.
inline Dataset Ids(const std::vector<uint64_t>& shards, const ReadOptions& read = {}) {
  return Dataset::FromSource(IdSource(shards), read);
}

// All ids of one element: tensor 0 as int64 (scalar or batch) or as decimal strings.
inline std::vector<int64_t> IdsOf(const Element& e) {
  const Tensor& t = e.tensors.at(0);
  std::vector<int64_t> out;
  int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(t.is_string() ? std::stoll(std::string(t.string(i))) : t.data<int64_t>()[i]);
  }
  return out;
}

// Next() up to `max_elements` times (default: to the end); ids of everything returned, in
// order. Fails the test on an error. (0 means none: a "0 = all" default once made a state
// saved "before the first Next" look like one that restores into an empty stream.)
inline std::vector<int64_t> Drain(Iterator* it, size_t max_elements = SIZE_MAX,
                                  std::vector<size_t>* sizes = nullptr) {
  std::vector<int64_t> ids;
  Element e;
  for (size_t n = 0; n < max_elements; ++n) {
    Result<bool> more = it->Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    std::vector<int64_t> v = IdsOf(e);
    if (sizes) sizes->push_back(v.size());
    ids.insert(ids.end(), v.begin(), v.end());
  }
  return ids;
}

// Next() until the stream fails and returns that error, calling `each` on every element
// delivered before it. A stream that ends without an error fails the test (the error was
// lost) and returns OK.
inline Status StreamError(Iterator* it, const std::function<void(const Element&)>& each = {}) {
  Element e;
  for (;;) {
    Result<bool> r = it->Next(&e);
    if (!r.ok()) return r.status();
    if (!*r) {
      ADD_FAILURE() << "the stream ended without reporting the error";
      return Status::OK();
    }
    if (each) each(e);
  }
}

inline std::unique_ptr<Iterator> MakeIt(const Dataset& ds, const PipelineOptions& o) {
  auto it = ds.MakeIterator(o);
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  return it.ok() ? std::move(it).value() : nullptr;
}

inline std::unique_ptr<Iterator> MakeIt(const Dataset& ds, uint32_t threads = 2,
                                        bool autotune = false) {
  PipelineOptions o;
  o.threads = threads;
  o.autotune = autotune;
  return MakeIt(ds, o);
}

}  // namespace sluice::pipeline::testing

namespace sluice::pipeline::testing {

// A source of `shards` x `per_shard` records generated on the fly (payload = decimal global
// id): lets tests use 10M-record epochs without holding them.
class VirtualSource final : public RecordSource {
 public:
  VirtualSource(uint32_t shards, uint64_t per_shard)
      : counts_(shards, per_shard), per_shard_(per_shard) {
    for (uint32_t s = 0; s < shards; ++s) names_.push_back("virtual-" + std::to_string(s));
  }
  const std::vector<uint64_t>& shard_records() const override { return counts_; }
  const std::string& shard_name(uint32_t shard) const override { return names_[shard]; }
  Result<ByteView> Read(uint32_t shard, uint64_t index, std::string* scratch) const override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    *scratch = std::to_string(shard * per_shard_ + index);
    return ByteView(*scratch);
  }
  uint64_t reads() const { return reads_.load(); }

 private:
  std::vector<uint64_t> counts_;
  std::vector<std::string> names_;
  uint64_t per_shard_;
  mutable std::atomic<uint64_t> reads_{0};
};

// Counts DecodeChunk calls per (epoch-agnostic) chunk of a wrapped source.
class CountingSource final : public ForwardingSource {
 public:
  using ForwardingSource::ForwardingSource;
  Status DecodeChunk(uint32_t shard, const format::ShardChunk& chunk, std::string fetched,
                     format::DecodedChunk* out) const override {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++decodes_[{shard, chunk.first_record}];
    }
    return ForwardingSource::DecodeChunk(shard, chunk, std::move(fetched), out);
  }
  std::map<std::pair<uint32_t, uint64_t>, int> TakeDecodes() {
    std::lock_guard<std::mutex> l(mu_);
    return std::exchange(decodes_, {});
  }
  uint64_t TotalDecodes() {
    std::lock_guard<std::mutex> l(mu_);
    uint64_t n = 0;
    for (const auto& [chunk, count] : decodes_) n += count;
    return n;
  }

 private:
  mutable std::mutex mu_;
  mutable std::map<std::pair<uint32_t, uint64_t>, int> decodes_;  // guarded by mu_
};

}  // namespace sluice::pipeline::testing

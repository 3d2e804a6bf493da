// `sluice stats`: records per value of a feature, as a keyed aggregation (sum of ones).
#include <cstdio>
#include <set>

#include "dist/map_phase.h"
#include "dist/wire.h"
#include "sluice/format/example.h"

namespace sluice::dist {
namespace {

// Keys carry the value's type in their first byte, so that the bytes "7" and the int64 7
// stay distinct values: 'b' bytes, 'i' int64 (decimal), 'f' float (%g), 'm' missing.
constexpr char kMissing = 'm';

std::string FloatText(float f) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", static_cast<double>(f));
  return text;
}

Status EmitValues(const format::FeatureView& f, MapOutput* out) {
  std::set<std::string> distinct;  // a record counts once per distinct value
  for (ByteView b : f.bytes) distinct.insert("b" + std::string(b));
  for (int64_t v : f.int64s) distinct.insert("i" + std::to_string(v));
  for (float v : f.floats) distinct.insert("f" + FloatText(v));
  if (distinct.empty()) return out->Add(std::string(1, kMissing), 1);
  for (const auto& key : distinct) SLUICE_RETURN_IF_ERROR(out->Add(key, 1));
  return Status::OK();
}

// Sends every entry of a stream to one rank.
class ToRank final : public ExchangeSource {
 public:
  ToRank(SortedStream* stream, Rank dest) : stream_(stream), dest_(dest) {}
  Result<bool> Next(Rank* dest, std::string* item) override {
    SLUICE_ASSIGN_OR_RETURN(bool more, stream_->Next(&kv_));
    if (!more) return false;
    *dest = dest_;
    *item = WireWriter().U64(kv_.value).Bytes(kv_.key).Take();
    return true;
  }
  std::string Describe() const override { return "value " + PrintableKey(kv_.key); }

 private:
  SortedStream* stream_;
  Rank dest_;
  KeyValue kv_;
};

}  // namespace

Result<StatsResult> RunStats(Transport* t, const StatsOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(auto tasks, ShardTasks(o.input));
  const format::ExampleParser parser({o.feature});
  KeyFunction keys = [&parser](ByteView record, TaskId, uint64_t, MapOutput* out) -> Status {
    thread_local std::vector<format::FeatureView> features;
    SLUICE_RETURN_IF_ERROR(parser.Parse(record, &features));
    return EmitValues(features[0], out);
  };
  AggregationOptions agg = AggregationOptionsFor(o.job, Merge::kSum, "stats");
  SLUICE_ASSIGN_OR_RETURN(auto map, RunMapPhase(t, o.input, tasks, keys, agg, o.job.tasks));
  DeleteRunsOnExit delete_runs(map);
  SLUICE_ASSIGN_OR_RETURN(auto reduced, AggregateByKey(t, map.runs, map.samples, agg));

  StatsResult result;
  result.load = reduced.load;
  result.hot_keys = reduced.hot_keys;
  result.tasks = tasks.size();
  result.progress = map.tasks.progress;
  for (uint64_t n : map.records) result.records += n;
  ToRank source(reduced.owned.get(), 0);
  auto sink = [&](Rank, std::string_view item) -> Status {
    WireReader in(item);
    uint64_t count = 0;
    std::string key;
    if (!in.U64(&count) || !in.Bytes(&key) || key.empty()) return Internal("stats: torn count");
    if (key[0] == kMissing) {
      result.missing += count;
    } else {
      result.counts[key.substr(1)] += count;
    }
    return Status::OK();
  };
  ExchangeOptions xo{o.job.memory_budget / 2, "stats (gathering counts on rank 0)"};
  SLUICE_RETURN_IF_ERROR(Exchange(t, &source, sink, xo).status());
  return result;
}

}  // namespace sluice::dist

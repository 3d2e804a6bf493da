// `sluice dedup`: (1) map: each record's content hash -> its global position; (2) keyed
// aggregation keeping the smallest position per hash; (3) the kept positions go to the rank
// that read each shard, which (4) writes its shards' kept records, in order, into the staged
// output; rank 0 publishes.
#include <xxhash.h>

#include <algorithm>
#include <unordered_map>

#include "dist/derived_job.h"
#include "dist/map_phase.h"
#include "dist/wire.h"
#include "sluice/dist/convert_job.h"
#include "sluice/format/example.h"
#include "sluice/format/record_reader.h"

namespace sluice::dist {
namespace {

// A position: shard (task) in the high 32 bits, record index in the low 32.
uint64_t Position(TaskId task, uint64_t index) { return (task << 32) | index; }

std::string ContentKey(ByteView bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  std::string key = "h";
  PutFixed64(&key, h.high64);
  PutFixed64(&key, h.low64);
  return key;
}

// The bytes a record is compared by: its feature's values (length-prefixed), or itself.
Result<bool> FeatureBytes(const format::ExampleParser& parser, ByteView record, std::string* out) {
  thread_local std::vector<format::FeatureView> features;
  SLUICE_RETURN_IF_ERROR(parser.Parse(record, &features));
  const format::FeatureView& f = features[0];
  out->clear();
  out->push_back(static_cast<char>(f.type));
  for (ByteView b : f.bytes) {
    PutFixed64(out, b.size());
    out->append(b);
  }
  for (int64_t v : f.int64s) PutFixed64(out, static_cast<uint64_t>(v));
  for (float v : f.floats) out->append(reinterpret_cast<const char*>(&v), sizeof v);
  return f.size() > 0;
}

// Sends each kept position to the rank that read its shard.
class KeptPositions final : public ExchangeSource {
 public:
  KeptPositions(SortedStream* owned, const std::vector<Rank>& reader)
      : owned_(owned), reader_(reader) {}
  Result<bool> Next(Rank* dest, std::string* item) override {
    SLUICE_ASSIGN_OR_RETURN(bool more, owned_->Next(&kv_));
    if (!more) return false;
    *dest = reader_[kv_.value >> 32];
    item->clear();
    PutFixed64(item, kv_.value);
    return true;
  }
  std::string Describe() const override { return "a kept position"; }

 private:
  SortedStream* owned_;
  const std::vector<Rank>& reader_;
  KeyValue kv_;
};

// Writes the kept records of the shards this rank read, one output part per input shard.
Status WriteKept(io::FileSystem* in_fs, const std::vector<TaskSpec>& tasks,
                 const std::vector<Rank>& reader, Rank self,
                 std::unordered_map<TaskId, std::vector<uint64_t>>& kept, const JobOutput& out,
                 std::vector<std::pair<TaskId, TaskOutput>>* written) {
  for (const auto& task : tasks) {
    if (reader[task.id] != self) continue;
    auto& keep = kept[task.id];
    std::sort(keep.begin(), keep.end());
    SLUICE_ASSIGN_OR_RETURN(auto writer, out.OpenPart(AttemptPart(task.id, 0, 0)));
    SLUICE_ASSIGN_OR_RETURN(auto reader_file, format::RecordReader::Open(in_fs, task.input));
    ByteView record;
    size_t next = 0;
    for (uint64_t index = 0; next < keep.size(); ++index) {
      SLUICE_ASSIGN_OR_RETURN(bool more, reader_file->Next(&record));
      if (!more)
        return DataLoss(task.input + ": shorter on the second read (changed during the job?)");
      if (Position(task.id, index) != keep[next]) continue;
      SLUICE_RETURN_IF_ERROR(writer->Write(record));
      ++next;
    }
    SLUICE_RETURN_IF_ERROR(writer->Close());
    written->emplace_back(task.id, OutputOf(*writer));
  }
  return Status::OK();
}

}  // namespace

Result<DedupResult> RunDedup(Transport* t, const DedupOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(DerivedJob job, StartDerivedJob(t, o.input, o.output, o.shards,
                                                          "sluice dedup", "feature=" + o.feature));
  const std::vector<TaskSpec>& tasks = job.tasks;
  io::FileSystem* in_fs = job.in_fs;

  std::optional<format::ExampleParser> parser;
  if (!o.feature.empty()) parser.emplace(std::vector<std::string>{o.feature});
  KeyFunction keys = [&](ByteView record, TaskId task, uint64_t index, MapOutput* m) -> Status {
    thread_local std::string bytes;
    const uint64_t position = Position(task, index);
    if (!parser) return m->Add(ContentKey(record), position);
    SLUICE_ASSIGN_OR_RETURN(bool has, FeatureBytes(*parser, record, &bytes));
    if (!has) return m->Add("m" + std::to_string(position), position);  // never a duplicate
    return m->Add(ContentKey(bytes), position);
  };
  AggregationOptions agg = AggregationOptionsFor(o.job, Merge::kMin, "dedup");
  SLUICE_ASSIGN_OR_RETURN(auto map, RunDerivedMapPhase(t, &job, keys, agg, o.job.tasks));
  DeleteRunsOnExit delete_runs(map);
  SLUICE_ASSIGN_OR_RETURN(auto reduced, AggregateByKey(t, map.runs, map.samples, agg));

  const std::vector<Rank>& reader = map.tasks.committed_rank;
  std::unordered_map<TaskId, std::vector<uint64_t>> kept;
  uint64_t kept_here = 0;
  KeptPositions source(reduced.owned.get(), reader);
  auto sink = [&](Rank, std::string_view item) -> Status {
    if (item.size() != 8) return Internal("dedup: torn position");
    uint64_t p = DecodeFixed64(item.data());
    kept[p >> 32].push_back(p);
    ++kept_here;
    return Status::OK();
  };
  ExchangeOptions xo{o.job.memory_budget / 2, "dedup (kept positions)"};
  SLUICE_RETURN_IF_ERROR(Exchange(t, &source, sink, xo).status());
  std::vector<std::pair<TaskId, TaskOutput>> written;
  SLUICE_RETURN_IF_ERROR(
      AgreeOnStatus(t, WriteKept(in_fs, tasks, reader, t->rank(), kept, *job.out, &written)));
  SLUICE_ASSIGN_OR_RETURN(auto totals, t->AllReduceSum({kept_here}));

  DedupResult result;
  result.records_out = totals[0];
  for (uint64_t n : map.records) result.records_in += n;
  result.load = reduced.load;
  result.hot_keys = reduced.hot_keys;
  result.progress = map.tasks.progress;
  result.reused = job.out->reused_count();
  std::map<std::string, std::string> metadata{{"dedup_of", o.input}};
  if (!o.feature.empty()) metadata["dedup_feature"] = o.feature;
  format::Manifest m;
  SLUICE_RETURN_IF_ERROR(PublishDerived(t, &job, tasks.size(), written, metadata, &m));
  result.shards = m.shards.size();
  return result;
}

}  // namespace sluice::dist

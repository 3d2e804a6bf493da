// `sluice reshard`: (1) map: each record with its order key, a function of (seed, position);
// (2) exchange: records to the rank owning their output shard (shard s: rank s % ranks),
// appended to a local spill file per shard with an index in memory; (3) each rank sorts its
// shards' indexes by order key and writes them; rank 0 publishes.
#include <unistd.h>

#include <algorithm>
#include <map>

#include "dist/derived_job.h"
#include "dist/map_phase.h"
#include "dist/wire.h"
#include "sluice/base/random.h"
#include "sluice/dist/convert_job.h"
#include "sluice/format/shard_writer.h"

namespace sluice::dist {
namespace {

uint64_t OrderKey(uint64_t seed, TaskId task, uint64_t index) {
  return Mix64(Mix64(seed ^ 0x5851F42D4C957F2Dull) ^ Mix64((task << 32) | index));
}
uint64_t ShardOf(uint64_t key, uint64_t shards) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Mix64(key)) * shards) >> 64);
}

// Records bound for other ranks: from this rank's committed map outputs.
class ToShardOwners final : public ExchangeSource {
 public:
  ToShardOwners(SortedStream* records, uint64_t shards, int ranks)
      : records_(records), shards_(shards), ranks_(ranks) {}
  Result<bool> Next(Rank* dest, std::string* item) override {
    SLUICE_ASSIGN_OR_RETURN(bool more, records_->Next(&kv_));
    if (!more) return false;
    *dest = static_cast<Rank>(ShardOf(kv_.value, shards_) % ranks_);
    item->clear();
    PutFixed64(item, kv_.value);
    item->append(kv_.key);
    return true;
  }
  std::string Describe() const override {
    return "a record of " + std::to_string(kv_.key.size()) + " bytes";
  }

 private:
  SortedStream* records_;
  uint64_t shards_;
  int ranks_;
  KeyValue kv_;
};

// The records of the output shards this rank owns: a spill file each, indexed in memory.
class ShardSpills {
 public:
  ShardSpills(std::string prefix, uint64_t index_budget)
      : prefix_(std::move(prefix)), budget_(index_budget) {}
  ~ShardSpills() {
    for (auto& [shard, spill] : spills_) (void)io::LocalFileSystem()->Delete(Path(shard));
  }

  Status Add(uint64_t shard, uint64_t key, ByteView record) {
    Spill& s = spills_[shard];
    if (!s.file) {
      SLUICE_ASSIGN_OR_RETURN(s.file, io::LocalFileSystem()->OpenForWrite(
                                          Path(shard), io::WriteOptions{.durable = false}));
    }
    s.index.push_back({key, s.file->bytes_written(), record.size()});
    if ((memory_ += sizeof(Entry)) > budget_) {
      return ResourceExhausted(
          "reshard (receiving): the index of the records this rank owns "
          "exceeds its share of the memory budget, " +
          FormatByteSize(budget_) + " (raise --memory-budget or use more ranks)");
    }
    return s.file->Append(record);
  }

  // Writes shard `shard`'s records in order of their keys.
  Status WriteShard(uint64_t shard, format::ShardWriter* out) {
    auto it = spills_.find(shard);
    if (it == spills_.end()) return Status::OK();
    Spill& s = it->second;
    SLUICE_RETURN_IF_ERROR(s.file->Close());
    std::sort(s.index.begin(), s.index.end(),
              [](const Entry& a, const Entry& b) { return a.key < b.key; });
    SLUICE_ASSIGN_OR_RETURN(auto in, io::LocalFileSystem()->OpenForRead(Path(shard)));
    std::string scratch;
    for (const Entry& e : s.index) {
      scratch.resize(e.size);
      SLUICE_ASSIGN_OR_RETURN(ByteView record, in->Read(e.offset, e.size, scratch.data()));
      if (record.size() != e.size) return DataLoss(Path(shard) + ": spill file truncated");
      SLUICE_RETURN_IF_ERROR(out->Write(record));
    }
    return Status::OK();
  }

 private:
  struct Entry {
    uint64_t key, offset, size;
  };
  struct Spill {
    std::unique_ptr<io::WritableFile> file;
    std::vector<Entry> index;
  };
  std::string Path(uint64_t shard) const {
    return prefix_ + "-" + std::to_string(shard) + ".records";
  }

  std::string prefix_;
  uint64_t budget_, memory_ = 0;
  std::map<uint64_t, Spill> spills_;
};

}  // namespace

Result<ReshardResult> RunReshard(Transport* t, const ReshardOptions& o) {
  OutputShards one_file_each = o.shards;
  one_file_each.shard_bytes = UINT64_MAX;  // exactly one file per output shard
  SLUICE_ASSIGN_OR_RETURN(
      DerivedJob job, StartDerivedJob(t, o.input, o.output, one_file_each, "sluice reshard",
                                      "seed=" + std::to_string(o.seed) +
                                          " shard_size=" + std::to_string(o.shards.shard_bytes)));
  const std::vector<TaskSpec>& tasks = job.tasks;
  uint64_t bytes = 0;
  for (const auto& task : tasks) bytes += task.bytes;
  const uint64_t shards =
      std::max<uint64_t>(1, (bytes + o.shards.shard_bytes - 1) / o.shards.shard_bytes);

  // Map: (record, order key), no combining (every record is kept).
  AggregationOptions agg = AggregationOptionsFor(o.job, Merge::kNone, "reshard");
  agg.combine = false;
  KeyFunction keys = [&o](ByteView record, TaskId task, uint64_t index, MapOutput* m) {
    return m->Add(record, OrderKey(o.seed, task, index));
  };
  SLUICE_ASSIGN_OR_RETURN(auto map, RunDerivedMapPhase(t, &job, keys, agg, o.job.tasks));
  DeleteRunsOnExit delete_runs(map);
  std::vector<std::unique_ptr<SortedStream>> runs;
  for (const auto& run : map.runs) {
    SLUICE_ASSIGN_OR_RETURN(auto stream, OpenRun(run));
    runs.push_back(std::move(stream));
  }
  auto records = MergeStreams(std::move(runs), Merge::kNone);

  // Exchange: each record to its shard's owner.
  ShardSpills spills(o.job.spill_dir + "/sluice-reshard-" + std::to_string(::getpid()) + "-r" +
                         std::to_string(t->rank()),
                     o.job.memory_budget / 4);
  ToShardOwners source(records.get(), shards, t->size());
  uint64_t received = 0;
  auto sink = [&](Rank, std::string_view item) -> Status {
    if (item.size() < 8) return Internal("reshard: torn record");
    uint64_t key = DecodeFixed64(item.data());
    ++received;
    return spills.Add(ShardOf(key, shards), key, item.substr(8));
  };
  SLUICE_RETURN_IF_ERROR(
      Exchange(t, &source, sink, {o.job.memory_budget / 2, "reshard (exchange)"}).status());
  for (const auto& run : map.runs) (void)io::LocalFileSystem()->Delete(run);  // room first

  // Write the owned shards, one output task each.
  Status status;
  std::vector<std::pair<TaskId, TaskOutput>> written;
  for (uint64_t s = t->rank(); s < shards && status.ok(); s += t->size()) {
    auto writer = job.out->OpenPart(AttemptPart(s, 0, 0));
    status = writer.status();
    if (status.ok()) status = spills.WriteShard(s, writer->get());
    if (status.ok()) status = (*writer)->Close();
    if (status.ok()) written.emplace_back(s, OutputOf(**writer));
  }
  SLUICE_RETURN_IF_ERROR(AgreeOnStatus(t, status));
  SLUICE_ASSIGN_OR_RETURN(auto totals, t->AllReduceSum({received}));
  ReshardResult result;
  result.records = totals[0];
  result.progress = map.tasks.progress;
  result.reused = job.out->reused_count();
  std::map<std::string, std::string> metadata{{"reshard_of", o.input},
                                              {"reshard_seed", std::to_string(o.seed)}};
  format::Manifest m;
  SLUICE_RETURN_IF_ERROR(PublishDerived(t, &job, shards, written, metadata, &m));
  result.shards = m.shards.size();
  return result;
}

}  // namespace sluice::dist

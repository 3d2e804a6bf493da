// Aggregation state under a memory budget: (key, value) entries merged by key in memory, and
// past the budget sorted and spilled to local disk as runs, read back as one stream in key
// order (an external merge, as Spark's ExternalAppendOnlyMap). Values are 64-bit: a count
// (stats) or a position (dedup's first occurrence).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::dist {

enum class Merge {
  kSum,   // values of one key add up (counts)
  kMin,   // the smallest value of a key wins (first occurrence)
  kNone,  // no merging: every entry is kept (a plain shuffle)
};
uint64_t MergeValues(Merge merge, uint64_t a, uint64_t b);

struct KeyValue {
  std::string key;
  uint64_t value = 0;
};

// (key, value) entries in ascending key order (byte-wise); with a merging kind each key once.
class SortedStream {
 public:
  virtual ~SortedStream() = default;
  // False at the end.
  virtual Result<bool> Next(KeyValue* kv) = 0;
};

// The entries of `inputs` (each sorted) as one sorted stream, merged per `merge`.
std::unique_ptr<SortedStream> MergeStreams(std::vector<std::unique_ptr<SortedStream>> inputs,
                                           Merge merge);
// Appends (key, value) entries to a run file on local disk (u32 key length, key, u64 value),
// in the order given: sorted if the caller adds them sorted. Threading: not thread-safe.
class RunWriter {
 public:
  static Result<std::unique_ptr<RunWriter>> Open(const std::string& path);
  Status Add(std::string_view key, uint64_t value);
  Status Close();
  uint64_t entries() const { return entries_; }

 private:
  explicit RunWriter(std::unique_ptr<io::WritableFile> file) : file_(std::move(file)) {}
  std::unique_ptr<io::WritableFile> file_;
  std::string buffer_;
  uint64_t entries_ = 0;
};

// A run file (RunWriter, WriteRun) read back as a stream, in file order.
Result<std::unique_ptr<SortedStream>> OpenRun(const std::string& path);
// Writes `stream` to `path` (local disk) as a run; returns the entries written.
Result<uint64_t> WriteRun(SortedStream* stream, const std::string& path);

// A key as it appears in errors: printable, at most 64 characters ("..." after that),
// other bytes as \xNN.
std::string PrintableKey(std::string_view key);

// Threading: not thread-safe.
class SpillingAggregator {
 public:
  // Memory a key costs in the table beyond its bytes (node, hash, value), for the budget.
  static constexpr uint64_t kEntryOverhead = 64;

  // `stage` names the aggregation in errors; runs go to files "<spill_prefix>-<n>.run".
  SpillingAggregator(Merge merge, uint64_t budget_bytes, std::string spill_prefix,
                     std::string stage);
  ~SpillingAggregator();  // deletes its run files
  SpillingAggregator(const SpillingAggregator&) = delete;
  SpillingAggregator& operator=(const SpillingAggregator&) = delete;

  // ResourceExhausted naming the key, the stage and the budget when one entry alone is
  // larger than the budget.
  Status Add(std::string_view key, uint64_t value);
  // Every entry in key order; afterwards the aggregator is empty again (its runs are read
  // by the stream, which must be consumed before the aggregator is destroyed).
  Result<std::unique_ptr<SortedStream>> Finish();

  uint64_t entries_added() const { return added_; }
  uint64_t runs_spilled() const { return runs_.size(); }
  uint64_t memory_bytes() const { return memory_; }

 private:
  Status Spill();
  std::unique_ptr<SortedStream> TakeMemory();

  const Merge merge_;
  const uint64_t budget_;
  const std::string prefix_, stage_;
  std::unordered_map<std::string, uint64_t> table_;  // merging kinds
  std::vector<KeyValue> list_;                       // Merge::kNone
  uint64_t memory_ = 0, added_ = 0;
  std::vector<std::string> runs_;
  uint64_t next_run_ = 0;
};

}  // namespace sluice::dist

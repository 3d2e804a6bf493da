// Aggregation by key across ranks, skew-aware (docs/dist.md, "Skew"):
//  1. Map side: each task attempt writes its (key, value) entries through a MapOutput, which
//     combines equal keys (the per-rank combiner) under a memory budget, spills sorted runs,
//     and samples the keys.
//  2. The samples of the committed attempts are gathered: keys holding more than
//     `hot_key_share` of one rank's fair share of the records are hot.
//  3. Exchange 1 (all-to-all): an entry goes to its key's home rank; a hot key's entries are
//     salted: spread round-robin over all ranks, where each rank aggregates its part.
//  4. Exchange 2: the partial aggregates of hot keys go home and merge (the final reduce).
// Each rank ends with the final (key, value) of the keys it owns, in key order, and every
// rank knows the per-rank load of the final aggregation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/exchange.h"
#include "sluice/dist/spill.h"
#include "sluice/dist/transport.h"

namespace sluice::dist {

struct AggregationOptions {
  Merge merge = Merge::kSum;
  bool combine = true;        // Default: combine equal keys on each rank before the exchange
  bool salt_hot_keys = true;  // Default: spread hot keys over all ranks
  // A key is hot when its estimated records exceed this fraction of a rank's fair share
  // (records / ranks). Default: 0.125
  double hot_key_share = 0.125;
  size_t samples_per_task = 1024;  // Default: 1024 keys sampled per task (reservoir)
  // Per rank, for exchange buffers and aggregation state together; past it, state spills to
  // local disk. Default: 256 MiB
  uint64_t memory_budget = uint64_t{256} << 20;
  std::string spill_dir = "/tmp";     // Default: /tmp (the CLI uses $TMPDIR)
  std::string stage = "aggregation";  // named in errors
};

// The 64-bit hash keys are routed by (XXH3).
uint64_t KeyHash(std::string_view key);

// A uniform sample of the key hashes of a stream of records (reservoir sampling).
class KeySample {
 public:
  KeySample(size_t capacity, uint64_t seed) : capacity_(capacity), seed_(seed) {}
  void Add(uint64_t key_hash);
  uint64_t records() const { return records_; }
  // Estimated records per sampled hash, added into *estimates.
  void AddEstimates(std::unordered_map<uint64_t, double>* estimates) const;
  std::string Encode() const;
  static Result<KeySample> Decode(std::string_view data);

 private:
  size_t capacity_;
  uint64_t seed_;
  uint64_t records_ = 0;
  std::vector<uint64_t> sample_;
};

// Where each key goes. Pure: tested without ranks.
class KeyRouter {
 public:
  KeyRouter(int ranks, std::unordered_set<uint64_t> hot, bool salt)
      : ranks_(ranks), hot_(std::move(hot)), salt_(salt) {}
  // Hot keys: estimates above `share` x total / ranks.
  static std::unordered_set<uint64_t> HotKeys(const std::unordered_map<uint64_t, double>& estimates,
                                              double total_records, int ranks, double share);
  Rank Home(uint64_t hash) const {
    return static_cast<Rank>((static_cast<unsigned __int128>(hash) * ranks_) >> 64);
  }
  bool IsHot(uint64_t hash) const { return salt_ && hot_.count(hash) > 0; }
  // Home, or for a hot key the next rank of a round-robin starting at home.
  Rank Route(uint64_t hash) {
    if (!IsHot(hash)) return Home(hash);
    return static_cast<Rank>((Home(hash) + next_salt_++) % ranks_);
  }
  size_t hot_keys() const { return hot_.size(); }

 private:
  int ranks_;
  std::unordered_set<uint64_t> hot_;
  bool salt_;
  uint64_t next_salt_ = 0;
};

// One task attempt's entries, combined and sorted into a run file.
class MapOutput {
 public:
  MapOutput(const AggregationOptions& options, std::string run_path, uint64_t seed);
  Status Add(std::string_view key, uint64_t value);
  // Writes the run file; the entries and sample are then in run_path() and sample().
  Status Close();
  const std::string& run_path() const { return run_path_; }
  const KeySample& sample() const { return sample_; }
  uint64_t records() const { return sample_.records(); }

 private:
  std::string run_path_;
  KeySample sample_;
  SpillingAggregator entries_;
};

struct AggregationResult {
  std::unique_ptr<SortedStream> owned;  // this rank's keys, final values, in key order
  std::vector<uint64_t> load;           // per rank: entries received by the final aggregation
  uint64_t hot_keys = 0;
  ExchangeStats exchange;  // this rank's, both exchanges
  // Owns the final state the stream reads; keep it alive with the stream.
  std::shared_ptr<void> state;
};

// Collective. `runs` and `samples`: this rank's committed map outputs.
Result<AggregationResult> AggregateByKey(Transport* transport, const std::vector<std::string>& runs,
                                         const std::vector<KeySample>& samples,
                                         const AggregationOptions& options);

}  // namespace sluice::dist

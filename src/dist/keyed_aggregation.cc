#include "sluice/dist/keyed_aggregation.h"

#include <xxhash.h>

#include <algorithm>

#include "dist/wire.h"
#include "sluice/base/random.h"

namespace sluice::dist {

uint64_t KeyHash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

void KeySample::Add(uint64_t key_hash) {
  ++records_;
  if (sample_.size() < capacity_) {
    sample_.push_back(key_hash);
    return;
  }
  // Vitter's algorithm R: the i-th record replaces a random slot with probability k/i.
  uint64_t j = SampleRng(Mix64(seed_ ^ records_)).UniformInt(records_);
  if (j < capacity_) sample_[j] = key_hash;
}

void KeySample::AddEstimates(std::unordered_map<uint64_t, double>* estimates) const {
  if (sample_.empty()) return;
  const double weight = static_cast<double>(records_) / static_cast<double>(sample_.size());
  for (uint64_t h : sample_) (*estimates)[h] += weight;
}

std::string KeySample::Encode() const {
  WireWriter w;
  w.U64(capacity_).U64(seed_).U64(records_).U64(sample_.size());
  for (uint64_t h : sample_) w.U64(h);
  return w.Take();
}

Result<KeySample> KeySample::Decode(std::string_view data) {
  WireReader in(data);
  uint64_t capacity = 0, seed = 0, records = 0, n = 0;
  if (!in.U64(&capacity) || !in.U64(&seed) || !in.U64(&records) || !in.U64(&n) ||
      n > data.size() / 8) {
    return DataLoss("key sample: malformed");
  }
  KeySample s(capacity, seed);
  s.records_ = records;
  s.sample_.resize(n);
  for (auto& h : s.sample_) {
    if (!in.U64(&h)) return DataLoss("key sample: malformed");
  }
  return s;
}

std::unordered_set<uint64_t> KeyRouter::HotKeys(
    const std::unordered_map<uint64_t, double>& estimates, double total_records, int ranks,
    double share) {
  std::unordered_set<uint64_t> hot;
  const double threshold = share * total_records / std::max(1, ranks);
  for (const auto& [h, records] : estimates) {
    if (records > threshold) hot.insert(h);
  }
  return hot;
}

MapOutput::MapOutput(const AggregationOptions& o, std::string run_path, uint64_t seed)
    : run_path_(std::move(run_path)),
      sample_(o.samples_per_task, seed),
      entries_(o.combine ? o.merge : Merge::kNone, o.memory_budget / 4, run_path_ + ".spill",
               o.stage + " (map side)") {}

Status MapOutput::Add(std::string_view key, uint64_t value) {
  sample_.Add(KeyHash(key));
  return entries_.Add(key, value);
}

Status MapOutput::Close() {
  SLUICE_ASSIGN_OR_RETURN(auto stream, entries_.Finish());
  return WriteRun(stream.get(), run_path_).status();
}

namespace {

// Exchange 1's items: [u8 salted][u64 value][key bytes].
std::string EncodeEntry(bool salted, const KeyValue& kv) {
  std::string item(1, salted ? '\1' : '\0');
  PutFixed64(&item, kv.value);
  item += kv.key;
  return item;
}

// Routes a sorted stream's entries: by the router (exchange 1) or home (exchange 2).
class RoutedSource final : public ExchangeSource {
 public:
  RoutedSource(SortedStream* stream, KeyRouter* router, bool home_only)
      : stream_(stream), router_(router), home_only_(home_only) {}
  Result<bool> Next(Rank* dest, std::string* item) override {
    SLUICE_ASSIGN_OR_RETURN(bool more, stream_->Next(&kv_));
    if (!more) return false;
    uint64_t h = KeyHash(kv_.key);
    *dest = home_only_ ? router_->Home(h) : router_->Route(h);
    *item = EncodeEntry(!home_only_ && router_->IsHot(h), kv_);
    return true;
  }
  std::string Describe() const override { return "key " + PrintableKey(kv_.key); }

 private:
  SortedStream* stream_;
  KeyRouter* router_;
  bool home_only_;
  KeyValue kv_;
};

struct FinalState {
  FinalState(const AggregationOptions& o, Rank rank)
      : final_(o.merge, o.memory_budget / 4,
               o.spill_dir + "/sluice-final-" + std::to_string(rank) + "-" +
                   std::to_string(reinterpret_cast<uintptr_t>(this)),
               o.stage + " (final reduce)"),
        hot_(o.merge, o.memory_budget / 4,
             o.spill_dir + "/sluice-hot-" + std::to_string(rank) + "-" +
                 std::to_string(reinterpret_cast<uintptr_t>(this)),
             o.stage + " (salted partials)") {}
  SpillingAggregator final_;
  SpillingAggregator hot_;
};

Result<KeyRouter> PlanRoutes(Transport* t, const std::vector<KeySample>& samples,
                             const AggregationOptions& o) {
  std::unordered_map<uint64_t, double> mine;
  uint64_t records = 0;
  for (const auto& s : samples) {
    s.AddEstimates(&mine);
    records += s.records();
  }
  // Each rank shares its 256 most frequent sampled keys: a hot key is frequent somewhere.
  std::vector<std::pair<uint64_t, double>> top(mine.begin(), mine.end());
  size_t keep = std::min<size_t>(top.size(), 256);
  std::partial_sort(top.begin(), top.begin() + keep, top.end(),
                    [](const auto& a, const auto& b) { return a.second > b.second; });
  WireWriter w;
  w.U64(records).U64(keep);
  for (size_t i = 0; i < keep; ++i) w.U64(top[i].first).U64(static_cast<uint64_t>(top[i].second));
  SLUICE_ASSIGN_OR_RETURN(auto all, t->AllGather(w.Take()));
  std::unordered_map<uint64_t, double> global;
  double total = 0;
  for (const auto& part : all) {
    WireReader in(part);
    uint64_t n = 0, r = 0;
    if (!in.U64(&r) || !in.U64(&n)) return Internal(o.stage + ": malformed key sample");
    total += static_cast<double>(r);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t h = 0, est = 0;
      if (!in.U64(&h) || !in.U64(&est)) return Internal(o.stage + ": malformed key sample");
      global[h] += static_cast<double>(est);
    }
  }
  return KeyRouter(t->size(), KeyRouter::HotKeys(global, total, t->size(), o.hot_key_share),
                   o.salt_hot_keys);
}

void AddStats(const ExchangeStats& a, ExchangeStats* sum) {
  sum->items_sent += a.items_sent;
  sum->bytes_sent += a.bytes_sent;
  sum->items_received += a.items_received;
  sum->bytes_received += a.bytes_received;
  sum->rounds += a.rounds;
}

}  // namespace

Result<AggregationResult> AggregateByKey(Transport* t, const std::vector<std::string>& runs,
                                         const std::vector<KeySample>& samples,
                                         const AggregationOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(KeyRouter router, PlanRoutes(t, samples, o));
  std::vector<std::unique_ptr<SortedStream>> inputs;
  for (const auto& run : runs) {
    SLUICE_ASSIGN_OR_RETURN(auto stream, OpenRun(run));
    inputs.push_back(std::move(stream));
  }
  auto local = MergeStreams(std::move(inputs), o.combine ? o.merge : Merge::kNone);
  auto state = std::make_shared<FinalState>(o, t->rank());
  uint64_t load = 0;
  ExchangeOptions xo{o.memory_budget / 2, o.stage + " (exchange)"};

  RoutedSource first(local.get(), &router, /*home_only=*/false);
  auto sink1 = [&](Rank, std::string_view item) -> Status {
    if (item.size() < 9) return Internal(o.stage + ": torn entry");
    std::string_view key = item.substr(9);
    uint64_t value = DecodeFixed64(item.data() + 1);
    ++load;
    bool partial = item[0] == '\1' && router.Home(KeyHash(key)) != t->rank();
    return partial ? state->hot_.Add(key, value) : state->final_.Add(key, value);
  };
  AggregationResult result;
  SLUICE_ASSIGN_OR_RETURN(auto stats1, Exchange(t, &first, sink1, xo));

  SLUICE_ASSIGN_OR_RETURN(auto partials, state->hot_.Finish());
  RoutedSource second(partials.get(), &router, /*home_only=*/true);
  auto sink2 = [&](Rank, std::string_view item) -> Status {
    ++load;
    return state->final_.Add(item.substr(9), DecodeFixed64(item.data() + 1));
  };
  SLUICE_ASSIGN_OR_RETURN(auto stats2, Exchange(t, &second, sink2, xo));
  AddStats(stats1, &result.exchange);
  AddStats(stats2, &result.exchange);

  std::vector<uint64_t> mine(t->size(), 0);
  mine[t->rank()] = load;
  SLUICE_ASSIGN_OR_RETURN(result.load, t->AllReduceSum(mine));
  SLUICE_ASSIGN_OR_RETURN(result.owned, state->final_.Finish());
  result.hot_keys = router.hot_keys();
  result.state = state;
  return result;
}

}  // namespace sluice::dist

// The keyed exchange's pieces without MPI: grants, spills, routing, and whole exchanges and
// aggregations across in-process ranks (threads), small budgets included.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <thread>

#include "sluice/dist/exchange.h"
#include "sluice/dist/keyed_aggregation.h"
#include "sluice/dist/launch.h"
#include "sluice/dist/spill.h"

namespace sluice::dist {
namespace {

TEST(DistGrants, FirstItemsFitThenTheRestIsSharedEvenly) {
  auto g = Grants({100, 100, 0}, {10, 30, 0}, 100, 0);
  EXPECT_EQ(g[2], 0u);
  EXPECT_EQ(g[0] + g[1], 100u);
  EXPECT_GE(g[0], 10u);
  EXPECT_GE(g[1], 30u);
}

TEST(DistGrants, NeverMoreThanOfferedNorTheBudget) {
  auto g = Grants({5, 7}, {5, 7}, 1000, 3);
  EXPECT_EQ(g, (std::vector<uint64_t>{5, 7}));
  g = Grants({600, 600, 600}, {500, 500, 500}, 1000, 0);
  uint64_t sum = g[0] + g[1] + g[2];
  EXPECT_LE(sum, 1000u);
}

TEST(DistGrants, TheRotationServesEverySenderInTurn) {
  // Three senders whose first items each take the whole budget: one a round, in turn.
  for (uint64_t round = 0; round < 3; ++round) {
    auto g = Grants({100, 100, 100}, {100, 100, 100}, 100, round);
    for (uint64_t s = 0; s < 3; ++s) EXPECT_EQ(g[s], s == round ? 100u : 0u) << round;
  }
}

std::string TempDir() {
  static int n = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("sluice-dist-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::vector<KeyValue> Drain(SortedStream* s) {
  std::vector<KeyValue> out;
  KeyValue kv;
  while (true) {
    auto more = s->Next(&kv);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more) break;
    out.push_back(kv);
  }
  return out;
}

TEST(DistSpill, PastTheBudgetEntriesSpillAndComeBackMergedInKeyOrder) {
  std::string dir = TempDir();
  SpillingAggregator agg(Merge::kSum, /*budget=*/1000, dir + "/a", "test");
  std::map<std::string, uint64_t> expected;
  for (int i = 0; i < 500; ++i) {
    std::string key = "k" + std::to_string(i % 37);
    ASSERT_TRUE(agg.Add(key, i).ok());
    expected[key] += i;
  }
  EXPECT_GT(agg.runs_spilled(), 1u);
  auto stream = agg.Finish();
  ASSERT_TRUE(stream.ok());
  auto got = Drain(stream->get());
  ASSERT_EQ(got.size(), expected.size());
  size_t i = 0;
  for (const auto& [key, sum] : expected) {
    EXPECT_EQ(got[i].key, key);
    EXPECT_EQ(got[i++].value, sum);
  }
  std::filesystem::remove_all(dir);
}

TEST(DistSpill, MinKeepsTheFirstPositionAndNoneKeepsEveryEntry) {
  std::string dir = TempDir();
  SpillingAggregator min(Merge::kMin, 200, dir + "/m", "test");
  SpillingAggregator none(Merge::kNone, 200, dir + "/n", "test");
  for (uint64_t pos : {9, 3, 7, 3, 12}) {
    ASSERT_TRUE(min.Add("dup", pos).ok());
    ASSERT_TRUE(none.Add("dup", pos).ok());
  }
  auto m = min.Finish();
  auto n = none.Finish();
  auto got_min = Drain(m->get());
  ASSERT_EQ(got_min.size(), 1u);
  EXPECT_EQ(got_min[0].value, 3u);
  EXPECT_EQ(Drain(n->get()).size(), 5u);
  std::filesystem::remove_all(dir);
}

TEST(DistSpill, AKeyLargerThanTheBudgetNamesTheKeyTheStageAndTheBudget) {
  SpillingAggregator agg(Merge::kSum, 100, TempDir() + "/x", "stats (final reduce)");
  Status s = agg.Add(std::string(200, 'z'), 1);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("stats (final reduce)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'zzzz"), std::string::npos);
  EXPECT_NE(s.message().find("(200 bytes)"), std::string::npos);
  EXPECT_NE(s.message().find("100 B"), std::string::npos) << s.message();
}

TEST(DistSpill, ATruncatedRunIsDataLossNotGarbage) {
  std::string dir = TempDir();
  SpillingAggregator agg(Merge::kSum, 1 << 20, dir + "/t", "test");
  ASSERT_TRUE(agg.Add("key", 1).ok());
  auto stream = agg.Finish();
  ASSERT_TRUE(WriteRun(stream->get(), dir + "/r.run").ok());
  std::filesystem::resize_file(dir + "/r.run", 9);
  auto run = OpenRun(dir + "/r.run");
  ASSERT_TRUE(run.ok());
  KeyValue kv;
  auto next = (*run)->Next(&kv);
  EXPECT_EQ(next.status().code(), StatusCode::kDataLoss);
  std::filesystem::remove_all(dir);
}

TEST(DistKeyRouter, HotKeysAreSpreadOverEveryRankAndOthersStayHome) {
  KeyRouter router(4, {42}, /*salt=*/true);
  std::map<Rank, int> seen;
  for (int i = 0; i < 8; ++i) ++seen[router.Route(42)];
  EXPECT_EQ(seen.size(), 4u);
  for (uint64_t h : {1ull, 99ull, ~0ull}) EXPECT_EQ(router.Route(h), router.Home(h));
  KeyRouter unsalted(4, {42}, /*salt=*/false);
  EXPECT_EQ(unsalted.Route(42), unsalted.Route(42));
}

TEST(DistKeyRouter, HotMeansAboveTheShareOfARanksFairShare) {
  auto hot = KeyRouter::HotKeys({{1, 300}, {2, 20}, {3, 10}}, 1000, 4, 0.125);
  EXPECT_EQ(hot, (std::unordered_set<uint64_t>{1}));  // threshold 31.25 records
}

TEST(DistKeySample, KeepsAUniformSampleAndRoundTrips) {
  KeySample s(100, 7);
  for (uint64_t i = 0; i < 10000; ++i) s.Add(i % 2 == 0 ? 1 : i);  // half the records: key 1
  std::unordered_map<uint64_t, double> est;
  s.AddEstimates(&est);
  EXPECT_NEAR(est[1], 5000, 1500);
  auto back = KeySample::Decode(s.Encode());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->records(), 10000u);
  EXPECT_FALSE(KeySample::Decode("xx").ok());
}

// Runs fn(rank, transport) on `ranks` threads of an in-process group.
void OnRanks(int ranks, const std::function<void(Rank, Transport*)>& fn) {
  auto group = InProcessGroup(ranks);
  std::vector<std::thread> threads;
  for (Rank r = 0; r < ranks; ++r) threads.emplace_back([&, r] { fn(r, group[r].get()); });
  for (auto& t : threads) t.join();
}

class VectorSource : public ExchangeSource {
 public:
  explicit VectorSource(std::vector<std::pair<Rank, std::string>> items)
      : items_(std::move(items)) {}
  Result<bool> Next(Rank* dest, std::string* item) override {
    if (next_ == items_.size()) return false;
    *dest = items_[next_].first;
    *item = items_[next_++].second;
    return true;
  }
  std::string Describe() const override { return "item " + std::to_string(next_ - 1); }

 private:
  std::vector<std::pair<Rank, std::string>> items_;
  size_t next_ = 0;
};

TEST(DistExchange, EveryItemArrivesOnceUnderATinyBudget) {
  std::vector<std::multiset<std::string>> received(3);
  std::vector<ExchangeStats> stats(3);
  OnRanks(3, [&](Rank r, Transport* t) {
    std::vector<std::pair<Rank, std::string>> items;
    for (int i = 0; i < 200; ++i) {
      items.push_back(
          {i % 3, std::to_string(r) + ":" + std::to_string(i) + std::string(i % 17, 'x')});
    }
    VectorSource source(items);
    auto sink = [&, r](Rank, std::string_view item) {
      received[r].insert(std::string(item));
      return Status::OK();
    };
    auto s = Exchange(t, &source, sink, ExchangeOptions{200, "test"});
    ASSERT_TRUE(s.ok()) << s.status().message();
    stats[r] = *s;
  });
  for (Rank d = 0; d < 3; ++d) {
    EXPECT_EQ(received[d].size(), 3u * ((200 - d + 2) / 3));
    for (Rank s = 0; s < 3; ++s) {
      for (int i = d; i < 200; i += 3) {
        EXPECT_EQ(received[d].count(std::to_string(s) + ":" + std::to_string(i) +
                                    std::string(i % 17, 'x')),
                  1u);
      }
    }
  }
  EXPECT_GT(stats[0].rounds, 10u);  // the budget forced many rounds
}

TEST(DistExchange, AnItemAboveTheBudgetFailsEveryRankWithItsName) {
  std::vector<Status> out(2);
  OnRanks(2, [&](Rank r, Transport* t) {
    VectorSource source(r == 1
                            ? std::vector<std::pair<Rank, std::string>>{{0, std::string(500, 'a')}}
                            : std::vector<std::pair<Rank, std::string>>{{1, "small"}});
    auto s = Exchange(
        t, &source, [](Rank, std::string_view) { return Status::OK(); },
        ExchangeOptions{200, "reshard (exchange)"});
    out[r] = s.status();
  });
  for (const Status& s : out) {
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(s.message().find("rank 1 on "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("reshard (exchange): item 0 (500 B)"), std::string::npos)
        << s.message();
  }
}

// Zipf-like keys on 4 ranks: counts are exact with and without salting and combining, and
// salting evens out the final aggregation's load.
TEST(DistAggregation, CountsAreExactAndSaltingEvensTheLoad) {
  std::string dir = TempDir();
  auto key_of = [](uint64_t i) {
    uint64_t k = i % 10 < 5 ? 0 : (i % 10 < 7 ? 1 : i % 97);  // key 0: half the records
    return "key" + std::to_string(k);
  };
  std::map<std::string, uint64_t> expected;
  for (uint64_t i = 0; i < 4 * 3000; ++i) ++expected[key_of(i)];
  for (bool salt : {false, true}) {
    std::vector<std::map<std::string, uint64_t>> got(4);
    std::vector<std::vector<uint64_t>> load(4);
    OnRanks(4, [&](Rank r, Transport* t) {
      AggregationOptions o;
      o.combine = false;
      o.salt_hot_keys = salt;
      o.memory_budget = 64 << 10;
      o.spill_dir = dir;
      MapOutput out(o, dir + "/map-" + std::to_string(salt) + "-" + std::to_string(r) + ".run", r);
      for (uint64_t i = r * 3000; i < (r + 1) * 3000u; ++i) ASSERT_TRUE(out.Add(key_of(i), 1).ok());
      ASSERT_TRUE(out.Close().ok());
      auto result = AggregateByKey(t, {out.run_path()}, {out.sample()}, o);
      ASSERT_TRUE(result.ok()) << result.status().message();
      for (const auto& kv : Drain(result->owned.get())) got[r][kv.key] += kv.value;
      load[r] = result->load;
    });
    std::map<std::string, uint64_t> merged;
    for (const auto& m : got) {
      for (const auto& [k, v] : m) {
        EXPECT_EQ(merged.count(k), 0u) << k << " owned by two ranks";
        merged[k] = v;
      }
    }
    EXPECT_EQ(merged, expected);
    uint64_t max = *std::max_element(load[0].begin(), load[0].end());
    uint64_t sum = 0;
    for (uint64_t l : load[0]) sum += l;
    double max_over_mean = static_cast<double>(max) * 4 / static_cast<double>(sum);
    if (salt) {
      EXPECT_LT(max_over_mean, 1.25);
    } else {
      EXPECT_GT(max_over_mean, 1.5);  // the rank owning key0 gets half the records
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(DistLaunch, TheLauncherIsReadFromTheEnvironment) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_EQ(*DetectLauncher(env({})), Launcher::kNone);
  EXPECT_EQ(*DetectLauncher(env({{"OMPI_COMM_WORLD_SIZE", "4"}, {"PMIX_RANK", "1"}})),
            Launcher::kMpirun);
  EXPECT_EQ(*DetectLauncher(env({{"PMIX_RANK", "1"}, {"SLURM_STEP_ID", "0"}})), Launcher::kSrun);
  // mpirun inside salloc: SLURM_* present, OMPI_COMM_WORLD_* wins.
  EXPECT_EQ(*DetectLauncher(env({{"OMPI_COMM_WORLD_SIZE", "2"},
                                 {"SLURM_PROCID", "0"},
                                 {"SLURM_STEP_ID", "0"},
                                 {"PMIX_RANK", "1"}})),
            Launcher::kMpirun);
  EXPECT_EQ(*DetectLauncher(env({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "1"}})), Launcher::kNone);
  auto no_pmix = DetectLauncher(env({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}}));
  ASSERT_FALSE(no_pmix.ok());
  EXPECT_NE(no_pmix.status().message().find("srun --mpi=pmix"), std::string::npos);
}

}  // namespace
}  // namespace sluice::dist

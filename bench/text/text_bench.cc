// bench/text: tokenization throughput against python3-sentencepiece and token cache read
// speed against memcpy. Padding waste is measured on pipeline output by
// text_pipeline_bench.cc (padded_batch / bucket_by_length / pack are pipeline stages).
// Run through bench/text/run.sh, which prepares the corpus, the model and the peer numbers:
//   text_bench CORPUS MODEL WORKDIR PYTHON_JSON
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sluice/io/file_system.h"
#include "sluice/text/plain_text.h"
#include "sluice/text/token_cache.h"
#include "sluice/text/tokenizer.h"

namespace sluice::text {
namespace {


void Check(const Status& st, const char* what) {
  if (st.ok()) return;
  std::fprintf(stderr, "text_bench: %s: %s\n", what, st.ToString().c_str());
  std::exit(1);
}

// Best wall time of `reps` runs of fn, in seconds.
double BestSeconds(int reps, const std::function<void()>& fn) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Best wall time and best process CPU time (all threads) of `reps` runs. CPU time is what a
// run costs whatever else the machine is doing; wall time is what a trainer waits.
struct Timing {
  double wall = 1e300, cpu = 1e300;
};
Timing BestTiming(int reps, const std::function<void()>& fn) {
  Timing best;
  for (int r = 0; r < reps; ++r) {
    const std::clock_t cpu_start = std::clock();
    best.wall = std::min(best.wall, BestSeconds(1, fn));
    best.cpu = std::min(best.cpu, static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
  }
  return best;
}

double LoadAverage() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

std::string Rate(double per_s) {
  if (per_s >= 1e9) return fmt::format("{:.2f} G", per_s / 1e9);
  return fmt::format("{:.2f} M", per_s / 1e6);
}

std::string Goal(bool met) { return met ? "met" : "MISSED"; }

// ---- tokenization -----------------------------------------------------------------------

void PrintRow(const std::string& engine, int threads, double tokens, Timing t, double py_wall,
              double py_cpu, const std::string& goal) {
  fmt::print("| {} | {} | {} | {:.2f}x | {} | {:.2f}x | {} |\n", engine, threads,
             Rate(tokens / t.wall), tokens / t.wall / py_wall, Rate(tokens / t.cpu),
             tokens / t.cpu / py_cpu, goal);
}

void BenchTokenize(const Tokenizer& tok, const std::vector<std::string_view>& lines,
                   uint64_t corpus_bytes, const nlohmann::json& py) {
  RaggedIds one, two;
  const Timing t1 = BestTiming(2, [&] { Check(tok.EncodeBatch(lines, 1, &one), "encode"); });
  const Timing t2 = BestTiming(2, [&] { Check(tok.EncodeBatch(lines, 2, &two), "encode"); });
  int64_t id_sum = 0;
  for (int32_t id : one.ids) id_sum += id;
  const bool same = one.ids == two.ids && one.offsets == two.offsets &&
                    one.total_ids() == py["tokens"].get<uint64_t>() &&
                    id_sum == py["id_sum"].get<int64_t>();
  const double tokens = static_cast<double>(one.total_ids());
  auto py_timing = [&](const char* key) {
    return Timing{tokens / py["tokens_per_s"][key].get<double>(),
                  tokens / py["tokens_per_cpu_s"][key].get<double>()};
  };
  const Timing p1 = py_timing("batch_1_thread"), p2 = py_timing("batch_2_threads"),
               loop = py_timing("loop");
  fmt::print("\n## Tokenization: {} lines, {:.1f} MB, {} tokens; ids identical to python: {}\n\n",
             lines.size(), corpus_bytes / 1e6, one.total_ids(), same ? "yes" : "NO");
  fmt::print(
      "| engine | threads | tokens/s (wall) | vs python 1 thread | tokens per CPU-s | "
      "vs python | goal |\n|---|---|---|---|---|---|---|\n");
  PrintRow(fmt::format("python3-sentencepiece {} encode(lines)",
                       py["sentencepiece_version"].get<std::string>()),
           1, tokens, p1, tokens / p1.wall, tokens / p1.cpu, "");
  PrintRow("python3-sentencepiece encode(lines)", 2, tokens, p2, tokens / p1.wall, tokens / p1.cpu,
           "");
  PrintRow("python3-sentencepiece [encode(l) for l in lines]", 1, tokens, loop, tokens / p1.wall,
           tokens / p1.cpu, "");
  PrintRow("sluice Tokenizer::EncodeBatch", 1, tokens, t1, tokens / p1.wall, tokens / p1.cpu,
           "per thread >= 1.0x (CPU-s): " + Goal(t1.cpu <= p1.cpu));
  PrintRow("sluice Tokenizer::EncodeBatch", 2, tokens, t2, tokens / p1.wall, tokens / p1.cpu,
           ">= 1.8x (wall): " + Goal(t2.wall * 1.8 <= p1.wall));
  fmt::print(
      "\nsluice vs python, both with 2 threads (wall): {:.2f}x; sluice 2 threads vs 1 "
      "(wall): {:.2f}x\n",
      p2.wall / t2.wall, t1.wall / t2.wall);
}

// ---- token cache ------------------------------------------------------------------------

void BenchCache(const RaggedIds& paragraphs, int32_t vocab_size, const std::string& workdir) {
  io::FileSystem* fs = io::LocalFileSystem();
  const std::string prefix = workdir + "/kernel_docs_cache";
  const double t_write = BestSeconds(1, [&] {
    auto w = TokenCacheWriter::Create(fs, prefix, static_cast<uint64_t>(vocab_size));
    Check(w.status(), "cache create");
    for (size_t i = 0; i < paragraphs.size(); ++i) Check((*w)->Append(paragraphs[i]), "append");
    Check((*w)->Close(), "cache close");
  });
  auto reader = TokenCacheReader::Open(fs, prefix);
  Check(reader.status(), "cache open");
  const TokenCacheReader& r = **reader;
  const double tokens = static_cast<double>(r.total_tokens());
  const uint64_t bytes = r.total_tokens() * TokenWidthBytes(r.width());

  uint64_t sum = 0;
  const double t_span = BestSeconds(20, [&] {
    uint64_t local = 0;
    for (uint64_t i = 0; i < r.size(); ++i) {
      for (uint16_t id : r.Document16(i)) local += id;
    }
    sum += local;
  });
  std::vector<uint64_t> order(r.size());
  for (uint64_t i = 0; i < r.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  const double t_shuffled = BestSeconds(20, [&] {
    uint64_t local = 0;
    for (uint64_t i : order) {
      for (uint16_t id : r.Document16(i)) local += id;
    }
    sum += local;
  });
  std::vector<int32_t> batch;
  const double t_copy = BestSeconds(20, [&] {
    for (uint64_t i = 0; i < r.size(); ++i) r.CopyDocument(i, &batch);
  });
  auto all = fs->ReadAll(TokenCacheDataPath(prefix));
  Check(all.status(), "read bin");
  std::vector<char> dst(bytes);
  const double t_memcpy = BestSeconds(20, [&] { std::memcpy(dst.data(), all->data(), bytes); });
  const double memcpy_rate = tokens / t_memcpy;

  fmt::print("\n## Token cache: {} documents, {} tokens, {} ({} bytes of ids, mapped: {})\n\n",
             r.size(), r.total_tokens(), r.width() == TokenWidth::k16 ? "uint16" : "32-bit", bytes,
             r.is_mapped() ? "yes" : "no");
  fmt::print("| operation | tokens/s | fraction of memcpy |\n|---|---|---|\n");
  fmt::print("| memcpy of the .bin bytes (baseline) | {} | 1.00 |\n", Rate(memcpy_rate));
  fmt::print("| read every document as a zero-copy span (sum of ids) | {} | {:.2f} |\n",
             Rate(tokens / t_span), tokens / t_span / memcpy_rate);
  fmt::print("| same, documents in shuffled order (as training reads them) | {} | {:.2f} |\n",
             Rate(tokens / t_shuffled), tokens / t_shuffled / memcpy_rate);
  fmt::print("| read every document widened into an int32 buffer | {} | {:.2f} |\n",
             Rate(tokens / t_copy), tokens / t_copy / memcpy_rate);
  fmt::print("| write the cache (writer + atomic rename) | {} | {:.2f} |\n", Rate(tokens / t_write),
             tokens / t_write / memcpy_rate);
  if (sum == 0) fmt::print("(empty cache)\n");  // keeps the summing loop observable
}

}  // namespace
}  // namespace sluice::text

int main(int argc, char** argv) {
  using namespace sluice::text;
  if (argc != 5) {
    std::fprintf(stderr, "usage: text_bench CORPUS MODEL WORKDIR PYTHON_JSON (see run.sh)\n");
    return 2;
  }
  const std::string corpus_path = argv[1], model = argv[2], workdir = argv[3];
  sluice::io::FileSystem* fs = sluice::io::LocalFileSystem();
  auto tok = Tokenizer::Open(fs, model);
  Check(tok.status(), "model");
  auto corpus = fs->ReadAll(corpus_path);
  Check(corpus.status(), "corpus");
  std::ifstream py_in(argv[4]);
  const nlohmann::json py = nlohmann::json::parse(py_in);

  std::vector<std::string_view> lines;
  for (const auto& d : SplitText(*corpus, TextUnit::kLine)) lines.push_back(d.text);
  fmt::print("# sluice text benchmark (model {}: {} pieces; load average {:.1f} on {} cores)\n",
             model, (*tok)->vocab_size(), LoadAverage(), std::thread::hardware_concurrency());
  BenchTokenize(**tok, lines, corpus->size(), py);

  std::vector<std::string_view> paras;
  for (const auto& d : SplitText(*corpus, TextUnit::kParagraph)) paras.push_back(d.text);
  RaggedIds paragraphs;
  Check((*tok)->EncodeBatch(paras, 2, &paragraphs), "encode paragraphs");
  BenchCache(paragraphs, (*tok)->vocab_size(), workdir);
  fmt::print(
      "\nload average at the end: {:.1f}. Wall-clock rates (and thread scaling) are only "
      "meaningful on an otherwise idle machine; CPU-second rates are robust to load.\n",
      LoadAverage());
  return 0;
}

// bench/text, pipeline rows: the same corpus through sluice pipelines. The tokenize stage's
// throughput (1 and 2 pipeline threads) against python3-sentencepiece, and the padding waste
// measured on real pipeline output: padded_batch, bucket_by_length and pack over the token
// cache text_bench wrote, read in global-shuffle order.
// Run through bench/text/run.sh (after text_bench):
//   text_pipeline_bench CORPUS MODEL WORKDIR PYTHON_JSON
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/text/bucketing.h"
#include "sluice/text/plain_text.h"
#include "sluice/text/stages.h"

namespace sluice::text {
namespace {

using pipeline::Dataset;
using pipeline::Element;

constexpr size_t kBatchRows = 32, kMaxLength = 512, kTokenBudget = 16384, kSeqLen = 2048;

template <typename T>
T Must(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "text_pipeline_bench: %s: %s\n", what, r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

// Drains `ds` with `threads` pipeline threads; calls fn on each element; returns seconds.
template <typename Fn>
double Drain(const Dataset& ds, uint32_t threads, Fn&& fn) {
  pipeline::PipelineOptions o;
  o.threads = threads;
  auto it = Must(ds.MakeIterator(o), "iterator");
  Element e;
  auto start = std::chrono::steady_clock::now();
  while (Must(it->Next(&e), "next")) fn(e);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BenchTokenizeStage(const std::string& corpus, std::shared_ptr<const Tokenizer> tok,
                        const nlohmann::json& py) {
  std::vector<std::string> lines;
  for (const auto& d : SplitText(corpus, TextUnit::kLine)) lines.emplace_back(d.text);
  const double py_rate = py["tokens_per_s"]["batch_1_thread"].get<double>();
  fmt::print("\n## Tokenize stage (read from memory -> tokenize), {} lines\n\n", lines.size());
  fmt::print(
      "| engine | pipeline threads | tokens/s (wall) | vs python 1 thread |\n|---|---|---|---|\n");
  fmt::print("| python3-sentencepiece encode(lines) | 1 | {:.3g} | 1.00x |\n", py_rate);
  Dataset source = Dataset::FromSource(pipeline::NewMemorySource({lines}));
  for (uint32_t threads : {1u, 2u}) {
    TokenizeOptions o;
    o.feature = "record";
    o.parallelism = static_cast<int>(threads);
    o.replace_invalid_utf8 = true;  // as python's encode
    uint64_t tokens = 0;
    double s = Drain(Tokenize(source, tok, o), threads,
                     [&](const Element& e) { tokens += e.tensors[1].num_elements(); });
    fmt::print("| sluice tokenize stage | {} | {:.3g} | {:.2f}x |\n", threads, tokens / s,
               tokens / s / py_rate);
  }
}

// Truncates `tokens` to kMaxLength (what the padded rows of text_bench do).
Dataset Truncated(const Dataset& ds) {
  pipeline::MapOptions mo;
  mo.name = "truncate";
  mo.parallelism = 0;
  return ds.Map(
      [](Element* e, const pipeline::MapContext&) {
        pipeline::Tensor& t = e->tensors[0];
        if (t.shape()[0] > static_cast<int64_t>(kMaxLength)) {
          pipeline::Tensor cut;
          cut.ResizeDense(pipeline::DType::kInt32, {static_cast<int64_t>(kMaxLength)}, nullptr);
          std::memcpy(cut.raw_data(), t.raw_data(), kMaxLength * 4);
          t = std::move(cut);
        }
        return Status::OK();
      },
      mo);
}

// Waste from a batch's mask feature (1 = real token).
void CountMask(const Element& e, size_t mask_index, TokenCounts* c) {
  const pipeline::Tensor& m = e.tensors[mask_index];
  for (int64_t i = 0; i < m.num_elements(); ++i) c->real += m.data<uint8_t>()[i];
  c->total += static_cast<uint64_t>(m.num_elements());
}

void Row(const std::string& method, TokenCounts c, double s) {
  fmt::print("| {} | {} | {} | {:.2f}% | {:.3g} |\n", method, c.real, c.total, 100 * c.waste(),
             c.real / s);
}

void BenchWaste(const std::string& cache, int32_t eos_id) {
  TokenCacheDatasetOptions o;
  o.shuffle = pipeline::ShuffleOptions{.seed = 42};
  Dataset docs = Must(ReadTokenCache(cache, o), "token cache");
  Dataset cut = Truncated(docs);
  fmt::print("\n## Padding waste from pipeline output (token cache, global shuffle)\n\n");
  fmt::print(
      "| pipeline | real tokens | slots | padding | real tokens/s |\n|---|---|---|---|---|\n");
  for (size_t multiple : {size_t{8}, size_t{1}}) {
    pipeline::PaddedBatchOptions pb;
    pb.batch_size = kBatchRows;
    pb.padding.pad_to_multiple_of = multiple;
    TokenCounts c;
    uint64_t rows = 0;
    double s = Drain(cut.PaddedBatch(pb), 2, [&](const Element& e) {
      CountMask(e, 1, &c);
      rows += static_cast<uint64_t>(e.tensors[1].shape()[0]);
    });
    if (multiple == 8) {  // naive: the same rows, each padded to the maximum length
      Row(fmt::format("naive pad-to-max: every row padded to {}", kMaxLength),
          TokenCounts{.real = c.real, .total = rows * kMaxLength}, s);
    }
    Row(fmt::format("padded_batch({}, pad_to_multiple_of={})", kBatchRows, multiple), c, s);
  }
  std::vector<size_t> bounds = GeometricBoundaries(kMaxLength, 1.1);
  std::vector<size_t> sizes = BatchSizesForTokenBudget(bounds, kTokenBudget, kMaxLength);
  for (size_t multiple : {size_t{8}, size_t{1}}) {
    pipeline::BucketOptions bo;
    bo.length_feature = "tokens";
    bo.boundaries.assign(bounds.begin(), bounds.end());
    bo.batch_sizes = sizes;
    bo.padding.pad_to_multiple_of = multiple;
    TokenCounts c;
    double s = Drain(cut.BucketByLength(bo), 2, [&](const Element& e) { CountMask(e, 1, &c); });
    Row(fmt::format("bucket_by_length(geometric x1.1, {} buckets, multiple {}) (goal <= 5%)",
                    sizes.size(), multiple),
        c, s);
  }
  PackOptions po;
  po.packing.seq_len = kSeqLen;
  po.packing.eos_id = eos_id;
  TokenCounts c;
  double s = Drain(Pack(docs, po).Batch(8), 2, [&](const Element& e) {
    const pipeline::Tensor& seg = e.tensors[1];
    for (int64_t i = 0; i < seg.num_elements(); ++i) c.real += seg.data<int32_t>()[i] > 0;
    c.total += static_cast<uint64_t>(seg.num_elements());
  });
  Row(fmt::format("pack({}, eos).batch(8), not truncated (goal >= 99% real)", kSeqLen), c, s);
}

}  // namespace
}  // namespace sluice::text

int main(int argc, char** argv) {
  using namespace sluice::text;
  if (argc != 5) {
    std::fprintf(stderr, "usage: text_pipeline_bench CORPUS MODEL WORKDIR PYTHON_JSON\n");
    return 2;
  }
  sluice::io::FileSystem* fs = sluice::io::LocalFileSystem();
  std::shared_ptr<const Tokenizer> tok = Must(Tokenizer::Open(fs, argv[2]), "model");
  std::string corpus = Must(fs->ReadAll(argv[1]), "corpus");
  std::ifstream py_in(argv[4]);
  const nlohmann::json py = nlohmann::json::parse(py_in);
  fmt::print("# sluice text path through pipelines\n");
  BenchTokenizeStage(corpus, tok, py);
  BenchWaste(std::string(argv[3]) + "/kernel_docs_cache", tok->eos_id());
  return 0;
}

// Prints an epoch's order (and snapshot identities) so that
// tests/python/test_order_reference.py can check them against an independent implementation
// of docs/order.md.
//
// Usage:
//   order_tool MODE SEED EPOCH BLOCK_SHARDS COUNT...         (none, global, block, buffer)
//   order_tool chunks SEED EPOCH LANES LANE_WINDOW SHARD...  (SHARD: chunk record counts,
//                                                             comma-separated; 0: empty shard)
//   order_tool identity SHARD_FILE...
// Output: the count fingerprint on the first line, then RecordAt(p) for every position; for
// identity, the snapshot fingerprint of the shard files.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/pipeline/global_order.h"
#include "sluice/pipeline/source.h"

namespace {

using namespace sluice::pipeline;

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 2;
}

void PrintOrder(const GlobalOrder& order) {
  std::printf("%llu\n", static_cast<unsigned long long>(order.snapshot_fingerprint()));
  for (uint64_t p = 0; p < order.size(); ++p) {
    std::printf("%llu\n", static_cast<unsigned long long>(order.RecordAt(p)));
  }
}

int Chunks(int argc, char** argv) {
  if (argc < 6) return Fail("usage: order_tool chunks SEED EPOCH LANES LANE_WINDOW SHARD...");
  OrderOptions options{ShuffleMode::kChunks, std::stoull(argv[2]), 4,
                       static_cast<uint32_t>(std::stoul(argv[4])), std::stoull(argv[5])};
  std::vector<uint64_t> counts;
  auto starts = std::make_shared<std::vector<uint64_t>>();
  uint64_t id = 0;
  for (int i = 6; i < argc; ++i) {
    std::stringstream in(argv[i]);
    std::string item;
    uint64_t shard = 0;
    while (std::getline(in, item, ',')) {
      const uint64_t n = std::stoull(item);
      if (n == 0) continue;
      starts->push_back(id + shard);
      shard += n;
    }
    counts.push_back(shard);
    id += shard;
  }
  starts->push_back(id);
  PrintOrder(GlobalOrder(counts, options, std::stoull(argv[3]), starts));
  return 0;
}

int Identity(int argc, char** argv) {
  std::vector<std::string> paths(argv + 2, argv + argc);
  auto source = OpenShardSource(sluice::io::LocalFileSystem(), paths);
  if (!source.ok()) return Fail(source.status().ToString());
  std::printf("%llu\n", static_cast<unsigned long long>((*source)->snapshot().fingerprint));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "chunks") return Chunks(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "identity") return Identity(argc, argv);
  if (argc < 5) return Fail("usage: order_tool MODE SEED EPOCH BLOCK_SHARDS COUNT...");
  sluice::Result<ShuffleMode> mode = ParseShuffleMode(argv[1]);
  if (!mode.ok()) return Fail(mode.status().ToString());
  OrderOptions options{*mode, std::stoull(argv[2]), static_cast<uint32_t>(std::stoul(argv[4]))};
  std::vector<uint64_t> counts;
  for (int i = 5; i < argc; ++i) counts.push_back(std::stoull(argv[i]));
  PrintOrder(GlobalOrder(counts, options, std::stoull(argv[3])));
  return 0;
}

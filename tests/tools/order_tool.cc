// Prints an epoch's order so that tests/python/test_order_reference.py can check it against an
// independent implementation of docs/order.md.
//
// Usage: order_tool MODE SEED EPOCH BLOCK_SHARDS COUNT...
// Output: the snapshot fingerprint on the first line, then RecordAt(p) for every position.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sluice/pipeline/global_order.h"

int main(int argc, char** argv) {
  using namespace sluice::pipeline;
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s MODE SEED EPOCH BLOCK_SHARDS COUNT...\n", argv[0]);
    return 2;
  }
  sluice::Result<ShuffleMode> mode = ParseShuffleMode(argv[1]);
  if (!mode.ok()) {
    std::fprintf(stderr, "%s\n", mode.status().ToString().c_str());
    return 2;
  }
  OrderOptions options{*mode, std::stoull(argv[2]), static_cast<uint32_t>(std::stoul(argv[4]))};
  std::vector<uint64_t> counts;
  for (int i = 5; i < argc; ++i) counts.push_back(std::stoull(argv[i]));
  GlobalOrder order(counts, options, std::stoull(argv[3]));
  std::printf("%llu\n", static_cast<unsigned long long>(order.snapshot_fingerprint()));
  for (uint64_t p = 0; p < order.size(); ++p) {
    std::printf("%llu\n", static_cast<unsigned long long>(order.RecordAt(p)));
  }
  return 0;
}

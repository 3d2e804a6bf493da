// Domain-separation tags and the epoch key of the orders (docs/order.md, "Hashing"): each
// permutation of an epoch gets its own key family, so that e.g. the chunk order is unrelated
// to the global record order of the same epoch. Changing any of these (or Mix64/CombineKey)
// changes every saved order: they are format.
#pragma once

#include <cstdint>

#include "sluice/pipeline/permutation.h"

namespace sluice::pipeline {

inline constexpr uint64_t kGlobalTag = 0x676c6f62616c0001ULL;       // "global"
inline constexpr uint64_t kShardOrderTag = 0x7368617264730002ULL;   // "shards"
inline constexpr uint64_t kWindowTag = 0x77696e646f770003ULL;       // "window"
inline constexpr uint64_t kFingerprintTag = 0x736e617073680004ULL;  // "snapsh"
inline constexpr uint64_t kChunksTag = 0x6368756e6b730005ULL;       // "chunks"
inline constexpr uint64_t kLaneWindowTag = 0x6c616e6577690006ULL;   // "lanewi"

inline uint64_t EpochKey(uint64_t tag, uint64_t seed, uint64_t epoch) {
  return CombineKey(CombineKey(tag, seed), epoch);
}

}  // namespace sluice::pipeline

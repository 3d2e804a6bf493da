// What a running pipeline measures about itself (docs/pipeline.md, "Stall report"): per stage
// elements, bytes, busy time, time waiting for input, time blocked on output, buffer fill;
// and for the consumer, the share of wall time it waited for data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/io/cache/cache_stats.h"
#include "sluice/io/http_engine.h"

namespace sluice::pipeline {

struct StageStats {
  std::string name;                // "read", "map:decode_image", "batch", ...
  uint64_t elements = 0;           // produced
  uint64_t bytes = 0;              // tensor bytes produced
  double busy_seconds = 0;         // doing its own work, summed over its threads
  double input_wait_seconds = 0;   // waiting for its input to produce
  double output_wait_seconds = 0;  // idle because its output buffer / the budget was full
  uint64_t buffered = 0;           // elements it holds now (ready or in flight)
  uint64_t buffer_capacity = 0;    // elements it may hold (0 for streaming stages)
  uint32_t parallelism = 1;        // concurrent tasks (threads it may use)
  // Share of its chunks the consumer's thread produced itself while waiting for them (it
  // helps rather than idles): counts as that much of one more thread.
  double consumer_share = 0;
  uint64_t skipped = 0;      // records dropped by on_error = skip | quarantine
  uint64_t quarantined = 0;  // of which written to the quarantine file
  // Read stage, chunks mode (docs/pipeline.md, "Decoded-chunk cache"): chunks decoded,
  // bytes fetched for them, loads a reader had to start itself (not read ahead), and
  // chunks evicted before their window ended (a window larger than the cache), and decoded
  // chunks the readers took from the cache (a reader reads on from the chunks it holds:
  // about one take per chunk per reader in a window, not one per record), and chunks used
  // without a decode because the dataset kept them from its previous iterator
  // (ReadOptions::keep_decoded_chunks).
  uint64_t chunk_decodes = 0;
  uint64_t chunk_fetched_bytes = 0;
  uint64_t chunk_loads_on_demand = 0;
  uint64_t chunk_evictions = 0;
  uint64_t chunk_takes = 0;
  uint64_t chunk_kept = 0;
};

struct PipelineStats {
  double wall_seconds = 0;           // since the iterator was created (or restored)
  double consumer_wait_seconds = 0;  // time the consumer spent inside Next()
  uint64_t elements = 0;             // delivered to the consumer
  uint32_t threads = 0;              // pool size
  uint64_t memory_budget_bytes = 0;
  uint64_t memory_used_bytes = 0;   // bytes held by pipeline buffers now
  uint64_t memory_peak_bytes = 0;   // most ever held
  uint64_t autotune_steps = 0;      // adjustments made by autotune
  uint64_t buffer_allocations = 0;  // fresh tensor buffers (flat in steady state: reuse)
  std::vector<StageStats> stages;   // source first, consumer-facing stage last
  // The node-local cache the source reads through (docs/cache.md), counted since the
  // iterator was created; absent without a cache.
  std::optional<io::cache::CacheStats> cache;
  // HTTP requests of the whole process (S3, WebHDFS) since the iterator began: counters
  // since then, gauges (in flight, queued) now; absent when no request was made.
  std::optional<io::HttpEngineStats> network;

  // Index of the stage that limits throughput (highest busy share of its threads), -1 if
  // none did measurable work.
  int bottleneck() const;
  // "trainer waited 23% of wall time; bottleneck: map:decode_image at 100% busy, 2 threads"
  // followed by one line per stage, then the cache's and the network's lines when present.
  std::string Report() const;
};

}  // namespace sluice::pipeline

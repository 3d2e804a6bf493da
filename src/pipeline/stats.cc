// The stall report: where the consumer's time went and which stage holds the pipeline back.
#include "sluice/pipeline/stats.h"

#include <cstdio>

#include "sluice/base/bytes.h"

namespace sluice::pipeline {
namespace {

double BusyShare(const StageStats& s, double wall) {
  if (wall <= 0) return 0;
  return s.busy_seconds / (wall * (std::max<uint32_t>(1, s.parallelism) + s.consumer_share));
}

std::string Threads(const StageStats& s) {
  std::string t = std::to_string(s.parallelism) + (s.parallelism == 1 ? " thread" : " threads");
  if (s.consumer_share >= 0.05) t += " + the consumer's";
  return t;
}

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f%%", fraction * 100);
  return buf;
}

}  // namespace

int PipelineStats::bottleneck() const {
  int best = -1;
  double share = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    double b = BusyShare(stages[i], wall_seconds);
    if (b > share) {
      share = b;
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::string PipelineStats::Report() const {
  double waited = wall_seconds > 0 ? consumer_wait_seconds / wall_seconds : 0;
  std::string out = "trainer waited " + Percent(waited) + " of wall time";
  int b = bottleneck();
  if (b >= 0) {
    const StageStats& s = stages[static_cast<size_t>(b)];
    out += "; bottleneck: " + s.name + " at " + Percent(BusyShare(s, wall_seconds)) + " busy, " +
           Threads(s);
  }
  char line[256];
  std::snprintf(line, sizeof(line), "\n%llu elements in %.2f s; memory %s of %s (peak %s)",
                static_cast<unsigned long long>(elements), wall_seconds,
                FormatByteSize(memory_used_bytes).c_str(),
                FormatByteSize(memory_budget_bytes).c_str(),
                FormatByteSize(memory_peak_bytes).c_str());
  out += line;
  std::snprintf(line, sizeof(line), "\n%-24s %12s %10s %6s %8s %8s %8s %10s %8s", "stage",
                "elements", "bytes", "tasks", "busy", "in-wait", "out-wait", "buffered", "skipped");
  out += line;
  for (const StageStats& s : stages) {
    std::string fill = s.buffer_capacity
                           ? std::to_string(s.buffered) + "/" + std::to_string(s.buffer_capacity)
                           : "-";
    std::snprintf(line, sizeof(line), "\n%-24s %12llu %10s %6u %8s %7.2fs %7.2fs %10s %8llu",
                  s.name.c_str(), static_cast<unsigned long long>(s.elements),
                  FormatByteSize(s.bytes).c_str(), s.parallelism,
                  Percent(BusyShare(s, wall_seconds)).c_str(), s.input_wait_seconds,
                  s.output_wait_seconds, fill.c_str(), static_cast<unsigned long long>(s.skipped));
    out += line;
  }
  if (cache) out += "\n" + cache->ToString();
  if (network) out += "\n" + io::DescribeHttpStats(*network, wall_seconds);
  return out;
}

}  // namespace sluice::pipeline

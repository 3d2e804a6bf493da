// CoalesceRanges: sort, then grow a request while the next range starts within max_gap of
// its end and the grown request stays within max_request.
#include "sluice/io/read_ranges.h"

#include <algorithm>
#include <cmath>

namespace sluice::io {

CoalesceOptions CoalesceOptions::FromNetwork(double first_byte_seconds, double bytes_per_second) {
  CoalesceOptions o;
  o.max_gap = static_cast<uint64_t>(std::llround(first_byte_seconds * bytes_per_second));
  o.max_request = static_cast<uint64_t>(std::llround(9 * first_byte_seconds * bytes_per_second));
  return o;
}

CoalesceOptions CoalesceOptions::ForS3() { return FromNetwork(0.030, 90e6); }

std::vector<ByteRange> CoalesceRanges(std::vector<ByteRange> ranges,
                                      const CoalesceOptions& options) {
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                              [](const ByteRange& r) { return r.length == 0; }),
               ranges.end());
  std::sort(ranges.begin(), ranges.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (!out.empty()) {
      ByteRange& last = out.back();
      const uint64_t end = std::max(last.end(), r.end());
      const bool overlaps = r.offset < last.end();
      const bool near = r.offset - std::min(r.offset, last.end()) <= options.max_gap;
      // An overlapping range must join (requests are disjoint); a near one joins if the
      // request stays within bounds.
      if (overlaps || (near && end - last.offset <= options.max_request)) {
        last.length = end - last.offset;
        continue;
      }
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace sluice::io

// Coalescing of ranged reads for stores where each request pays a first-byte latency (S3):
// nearby ranges become one request, large merged requests stay bounded. Pure, with its own
// tests (tests/unit/read_ranges_test.cc), in the manner of arrow's CoalesceReadRanges.
#pragma once

#include <cstdint>
#include <vector>

namespace sluice::io {

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
  bool operator==(const ByteRange&) const = default;
};

struct CoalesceOptions {
  // Ranges separated by at most this many bytes are read as one request; the bytes between
  // them are read and dropped.
  uint64_t max_gap = 0;
  // Merging stops before a request would grow past this (a single range longer than it stays
  // whole: splitting it into parallel parts is the reader's business).
  uint64_t max_request = 0;

  // Limits from the store's time to first byte (seconds) and one connection's bandwidth
  // (bytes/s):
  //  - a gap costs gap / bandwidth to read through, a separate request costs the first-byte
  //    wait, so gaps up to ttfb x bandwidth are cheaper to read than to skip;
  //  - a request spends ttfb waiting and size / bandwidth transferring; at 9 x ttfb x
  //    bandwidth the wait is 10% of its time, and longer requests gain little, while shorter
  //    ones in parallel finish sooner: max_request = 9 x ttfb x bandwidth.
  // S3 (AWS's guidance and our RGW measurements): ttfb ~ 30 ms, ~90 MB/s per connection ->
  // max_gap ~ 2.7 MB, max_request ~ 24 MB.
  static CoalesceOptions FromNetwork(double first_byte_seconds, double bytes_per_second);
  // FromNetwork(0.030, 90e6), the default for S3.
  static CoalesceOptions ForS3();
};

// Requests covering `ranges` (any order; overlapping and empty ranges allowed), sorted by
// offset and disjoint: every non-empty input range lies inside exactly one request.
std::vector<ByteRange> CoalesceRanges(std::vector<ByteRange> ranges,
                                      const CoalesceOptions& options);

}  // namespace sluice::io

// The fast path of `sluice verify` over an uncompressed shard: large positional reads into
// one reused buffer per thread, every record's length CRC and payload CRC checked as the
// RecordReader checks them (format::ScanIntactRecords), and the records' places kept as a
// digest. It only proves a byte range clean: at the first thing that is not an intact record
// it gives up, and verify reads the shard again with the RecordReader in skip mode, which
// names every fault by file and offset.
#pragma once

#include <cstdint>

#include "sluice/base/random.h"
#include "sluice/io/file_system.h"

namespace sluice::cli {

// A digest of a set of records' places (number in the shard, file offset of the framed
// record, payload length): equal digests of equally many places mean the same places under
// the same numbers, i.e. the same sequence (but for a ~2^-64 chance). A sum, so that the
// digests of pieces of a shard scanned apart add up to the digest of the whole.
struct PlaceDigest {
  uint64_t value = 0;
  uint64_t count = 0;
  void Add(uint64_t number, uint64_t offset, uint64_t length) {
    value += Mix64(Mix64(Mix64(number) ^ offset) ^ length);
    ++count;
  }
  void Merge(const PlaceDigest& other) {
    value += other.value;
    count += other.count;
  }
  bool operator==(const PlaceDigest&) const = default;
};

// What ScanCleanRange proved about a byte range of a shard.
struct CleanRange {
  bool clean = false;  // the range is a sequence of intact records, exactly
  PlaceDigest places;  // their places, numbered from the range's first_number
};

// Reads bytes [begin, end) of an uncompressed shard (begin and end at record boundaries;
// end <= file.size()) and checks that they are whole records whose length and payload CRCs
// match, none longer than max_record_bytes. `first_number`: how many records precede
// `begin`. A read error or a file that shrank gives clean == false, like any fault.
// Threading: safe to call from several threads at once (each thread has its own buffer).
CleanRange ScanCleanRange(const io::RandomAccessFile& file, uint64_t begin, uint64_t end,
                          uint64_t first_number, uint64_t max_record_bytes);

}  // namespace sluice::cli

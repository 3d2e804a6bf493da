#include "cli/verify_scan.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "format/framing.h"
#include "sluice/base/bytes.h"

namespace sluice::cli {
namespace {

// Bytes per read: a buffer that stays in L2, so the CRCs read what the copy out of the page
// cache has just written; larger reads fall out of L2, much smaller ones pay a syscall per
// few records. No memory map: a file truncated under it kills the process with SIGBUS, and
// under a hypervisor its page faults can cost more than the copy it saves.
constexpr size_t kReadBytes = size_t{256} << 10;
// Records are checked this many bytes at a time, then their headers read again for the
// digest while still in L1.
constexpr size_t kCheckBytes = size_t{16} << 10;

// One buffer per thread, kept across shards: a fresh buffer per shard costs a page fault per
// 4 KiB on first touch, which under a hypervisor was ~8% of verify's CPU.
struct ScanBuffer {
  std::unique_ptr<char[]> bytes;
  size_t capacity = 0;
  char* Reserve(size_t n) {
    if (capacity < n) {
      bytes = std::make_unique_for_overwrite<char[]>(n);
      capacity = n;
    }
    return bytes.get();
  }
};
thread_local ScanBuffer t_buffer;

}  // namespace

CleanRange ScanCleanRange(const io::RandomAccessFile& file, uint64_t begin, uint64_t end,
                          uint64_t first_number, uint64_t max_record_bytes) {
  CleanRange out;
  if (begin > end || end > file.size()) return out;
  size_t capacity = kReadBytes;  // bytes of the buffer in use: more only for a long record
  char* buf = t_buffer.Reserve(capacity);
  uint64_t base = begin;  // file offset of buf[0]
  size_t held = 0;        // bytes of buf filled
  uint64_t number = first_number;
  while (true) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(capacity - held, end - (base + held)));
    if (want > 0) {
      auto got = file.Read(base + held, want, buf + held);
      if (!got.ok() || got->size() != want) return out;  // the slow path names the error
      if (got->data() != buf + held) std::memcpy(buf + held, got->data(), want);
      held += want;
    }
    size_t at = 0;  // bytes of buf checked
    while (at < held) {
      size_t n = format::ScanIntactRecords(buf + at, held - at, max_record_bytes,
                                           /*verify_crc=*/true, kCheckBytes);
      if (n == 0) break;
      for (size_t p = at; p < at + n;) {
        const uint64_t length = DecodeFixed64(buf + p);
        out.places.Add(number++, base + p, length);
        p += length + format::kRecordOverheadBytes;
      }
      at += n;
    }
    if (base + at == end) {
      out.clean = true;
      return out;
    }
    if (base + held == end) return out;  // what is left is not an intact record
    if (at > 0) {                        // keep the start of the record the read cut
      std::memmove(buf, buf + at, held - at);
      base += at;
      held -= at;
      capacity = std::max(kReadBytes, held);  // back to short reads after a long record
      continue;
    }
    if (held < capacity) continue;
    // One record longer than the buffer: grow it, if the header is good.
    uint64_t length = 0;
    if (format::CheckRecordHeader(buf, max_record_bytes, /*verify_crc=*/true, &length) !=
            format::HeaderCheck::kOk ||
        length + format::kRecordOverheadBytes <= held ||  // whole, yet not intact
        length + format::kRecordOverheadBytes > end - base) {
      return out;
    }
    capacity = static_cast<size_t>(length + format::kRecordOverheadBytes);
    if (t_buffer.capacity < capacity) {
      auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
      std::memcpy(bigger.get(), buf, held);
      t_buffer.bytes = std::move(bigger);
      t_buffer.capacity = capacity;
    }
    buf = t_buffer.bytes.get();
  }
}

}  // namespace sluice::cli

#include "sluice/base/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace sluice::crc32c {

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  // ISA-L's crc32_iscsi neither pre- nor post-inverts, and takes an int length.
  uint32_t state = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (n > 0) {
    int chunk = n > static_cast<size_t>(INT_MAX / 2) ? INT_MAX / 2 : static_cast<int>(n);
    state = crc32_iscsi(p, chunk, state);
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
  return ~state;
}

}  // namespace sluice::crc32c

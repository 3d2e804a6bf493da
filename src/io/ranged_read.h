// One asynchronous ranged read split into parts fetched at once: what remote files (S3,
// WebHDFS) do in RandomAccessFile::ReadAsync. AWS recommends 8-16 MiB ranges; a chunk larger
// than a part is fetched as parallel requests and gathered in order. Independent of HTTP: the
// caller supplies how one part is fetched and cancelled, so this is tested without a network.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::io {

struct PartFetcher {
  // Starts fetching bytes [first, first + length) and returns a handle for `cancel`. `done`
  // runs exactly once, never inside `fetch`, with the part's bytes or an error; bytes of any
  // other length than `length` are refused (DataLoss), never handed on.
  std::function<uint64_t(uint64_t first, uint64_t length,
                         std::function<void(Result<std::string>)> done)>
      fetch;
  // Stops a part that is no longer wanted (another part failed); its `done` may still run.
  std::function<void(uint64_t handle)> cancel;
};

// How the gathered result reaches `done`.
enum class Delivery {
  kExecutor,  // on context.executor (default IoExecutor()): ReadAsync's contract
  // On the thread that answered the last part, or (length 0, cancelled) on the executor. For
  // a blocking Read() whose `done` only wakes the caller: it then needs no executor thread,
  // so a Read() called from an executor thread cannot starve its own delivery.
  kLastPart,
};

// Reads [offset, offset + length) as ceil(length / part_bytes) parts fetched at once. `done`
// runs exactly once, never inside this call, as `delivery` says: with all the bytes in
// order, or with the first error (the other parts are then cancelled). `what` names the
// file in errors. length 0 delivers empty bytes.
void GatherRanges(const std::string& what, uint64_t offset, uint64_t length, uint64_t part_bytes,
                  const PartFetcher& fetcher, ReadCallback done, const IoContext& context,
                  Delivery delivery = Delivery::kExecutor);

}  // namespace sluice::io

// Parallel ranged reads gathered into one (ranged_read.h).
#include "io/ranged_read.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "sluice/base/thread_pool.h"

namespace sluice::io {

namespace {

// The parts of one read: filled by the parts' callbacks, delivered once.
struct Gather {
  std::mutex mu;
  std::string bytes;              // guarded by mu
  uint64_t remaining = 0;         // guarded by mu: parts not yet answered
  Status error;                   // guarded by mu: the first failure
  std::vector<uint64_t> handles;  // guarded by mu
  ReadCallback done;
  ThreadPool* executor = nullptr;

  static void Run(const std::shared_ptr<Gather>& self) {
    if (self->error.ok()) {
      self->done(std::move(self->bytes));
    } else {
      self->done(self->error);
    }
  }
  void Deliver(std::shared_ptr<Gather> self) {
    executor->Submit([self = std::move(self)] { Run(self); });
  }
};

}  // namespace

void GatherRanges(const std::string& what, uint64_t offset, uint64_t length, uint64_t part_bytes,
                  const PartFetcher& fetcher, ReadCallback done, const IoContext& context,
                  Delivery delivery) {
  auto gather = std::make_shared<Gather>();
  gather->done = std::move(done);
  gather->executor = context.executor != nullptr ? context.executor : IoExecutor();
  if (context.cancel != nullptr && context.cancel->cancelled()) {
    gather->error = Cancelled("read of " + what + " cancelled");
  }
  if (length == 0 || !gather->error.ok()) {
    gather->Deliver(gather);
    return;
  }
  const uint64_t part = std::max<uint64_t>(part_bytes, 1);
  const uint64_t parts = (length + part - 1) / part;
  if (parts > 1) gather->bytes.resize(length);
  gather->remaining = parts;
  // Held while the parts start, so a quick failure sees every handle it must cancel.
  std::lock_guard<std::mutex> lock(gather->mu);
  for (uint64_t i = 0; i < parts; ++i) {
    const uint64_t first = offset + i * part;
    const uint64_t size = std::min(part, offset + length - first);
    auto on_part = [gather, what, first, size, offset, parts, delivery,
                    cancel = fetcher.cancel](Result<std::string> r) {
      Status s = r.status();
      if (s.ok() && r->size() != size) {
        s = DataLoss(what + ": asked for " + std::to_string(size) + " bytes at offset " +
                     std::to_string(first) + ", got " + std::to_string(r->size()));
      }
      std::vector<uint64_t> others;
      bool last = false;
      {
        std::lock_guard<std::mutex> guard(gather->mu);
        if (s.ok() && parts == 1) {
          gather->bytes = std::move(*r);  // the common case: no copy
        } else if (s.ok()) {
          std::memcpy(gather->bytes.data() + (first - offset), r->data(), size);
        } else if (gather->error.ok()) {
          gather->error = s;
          others = gather->handles;  // the other parts are of no use now
        }
        last = --gather->remaining == 0;
      }
      if (cancel) {
        for (uint64_t handle : others) cancel(handle);
      }
      if (last && delivery == Delivery::kLastPart) {
        Gather::Run(gather);
      } else if (last) {
        gather->Deliver(gather);
      }
    };
    gather->handles.push_back(fetcher.fetch(first, size, std::move(on_part)));
  }
}

}  // namespace sluice::io

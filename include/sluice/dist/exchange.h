// The keyed exchange: items (each bound for one rank) moved between all ranks in rounds of
// MPI all-to-all, with bounded buffers on both sides (docs/dist.md, "Memory").
//
// Each round: every rank tells every other how many bytes it has queued for it and the size
// of its first item (all-to-all); each receiver grants bytes out of its receive budget
// (Grants, below); senders send whole items within their grants (all-to-allv); a sum over
// the ranks says whether anything is left. So a rank never holds more than its send budget
// plus its receive budget of exchange buffers, whatever the others send it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/transport.h"

namespace sluice::dist {

// How a receiver shares `budget` bytes among senders that offer `offered[s]` bytes whose
// first item is `first[s]` bytes (0: nothing offered). Senders are served starting at
// `round` % size, so that no sender starves: first each whose first item still fits gets it,
// then the rest is shared out evenly up to each offer. Whenever anything is offered and
// every first item is <= budget, at least one sender's first item is granted.
std::vector<uint64_t> Grants(const std::vector<uint64_t>& offered,
                             const std::vector<uint64_t>& first, uint64_t budget, uint64_t round);

// Where the exchange pulls this rank's outgoing items from.
class ExchangeSource {
 public:
  virtual ~ExchangeSource() = default;
  // The next item and its destination; false when there are no more.
  virtual Result<bool> Next(Rank* destination, std::string* item) = 0;
  // What the item last returned is, for errors: "key 'x' (3 bytes)", "record 7 of a.tfrecord".
  virtual std::string Describe() const = 0;
};

// Takes each received item (a view valid during the call).
using ExchangeSink = std::function<Status(Rank source, std::string_view item)>;

struct ExchangeOptions {
  // Exchange buffers of this rank: half for items queued to send, half for items received
  // in one round. Default: 64 MiB.
  uint64_t budget_bytes = uint64_t{64} << 20;
  std::string stage = "exchange";  // named in errors
};

struct ExchangeStats {
  uint64_t items_sent = 0, bytes_sent = 0;
  uint64_t items_received = 0, bytes_received = 0;
  uint64_t rounds = 0;
};

// Collective: every rank calls it. An error on one rank (an item larger than half the
// budget: ResourceExhausted naming the item, the stage and the budget; a sink's error) ends
// the exchange at the next round on every rank, each returning that error tagged with the
// failed rank and its host.
Result<ExchangeStats> Exchange(Transport* transport, ExchangeSource* source,
                               const ExchangeSink& sink, const ExchangeOptions& options);

}  // namespace sluice::dist

#include "sluice/dist/exchange.h"

#include <algorithm>
#include <deque>

#include "sluice/base/bytes.h"
#include "sluice/dist/task_runner.h"

namespace sluice::dist {

std::vector<uint64_t> Grants(const std::vector<uint64_t>& offered,
                             const std::vector<uint64_t>& first, uint64_t budget, uint64_t round) {
  const size_t n = offered.size();
  std::vector<uint64_t> grant(n, 0);
  if (n == 0) return grant;
  uint64_t left = budget;
  // First items, in rotating order.
  for (size_t k = 0; k < n; ++k) {
    size_t s = (round + k) % n;
    if (offered[s] > 0 && first[s] <= left) {
      grant[s] = first[s];
      left -= first[s];
    }
  }
  // The rest, evenly, up to each offer.
  while (left > 0) {
    uint64_t wanting = 0;
    for (size_t s = 0; s < n; ++s) wanting += grant[s] < offered[s] && grant[s] > 0;
    if (wanting == 0) break;
    uint64_t share = std::max<uint64_t>(1, left / wanting);
    for (size_t k = 0; k < n && left > 0; ++k) {
      size_t s = (round + k) % n;
      if (grant[s] == 0 || grant[s] >= offered[s]) continue;
      uint64_t add = std::min({share, offered[s] - grant[s], left});
      grant[s] += add;
      left -= add;
    }
  }
  return grant;
}

namespace {

constexpr uint64_t kFrame = 8;  // each item travels as u64 length + bytes

// This rank's side of the exchange: queues per destination, filled from the source.
class Outbox {
 public:
  Outbox(int ranks, ExchangeSource* source, const ExchangeOptions& o)
      : queues_(ranks), queued_(ranks, 0), source_(source), o_(o) {}

  // Pulls items until the send budget is used; the error is this rank's to report.
  Status Fill() {
    const uint64_t limit = o_.budget_bytes / 2;
    std::string item;
    Rank dest = 0;
    while (!done_ && total_ < limit) {
      SLUICE_ASSIGN_OR_RETURN(bool more, source_->Next(&dest, &item));
      if (!more) {
        done_ = true;
        break;
      }
      if (item.size() + kFrame > limit) {
        return ResourceExhausted(o_.stage + ": " + source_->Describe() + " (" +
                                 FormatByteSize(item.size()) +
                                 ") does not fit the exchange buffers of the memory budget of " +
                                 FormatByteSize(o_.budget_bytes) + " (raise --memory-budget)");
      }
      if (dest < 0 || dest >= static_cast<Rank>(queues_.size())) {
        return Internal(o_.stage + ": item for rank " + std::to_string(dest));
      }
      queued_[dest] += item.size() + kFrame;
      total_ += item.size() + kFrame;
      queues_[dest].push_back(std::move(item));
    }
    return Status::OK();
  }

  uint64_t pending() const { return total_ + (done_ ? 0 : 1); }
  void Offers(uint64_t cap, std::vector<uint64_t>* offered, std::vector<uint64_t>* first) const {
    for (size_t d = 0; d < queues_.size(); ++d) {
      (*offered)[d] = std::min(queued_[d], cap);
      (*first)[d] = queues_[d].empty() ? 0 : queues_[d].front().size() + kFrame;
    }
  }
  // Whole items for `dest`, up to `grant` bytes, framed.
  std::string Take(size_t dest, uint64_t grant, ExchangeStats* stats) {
    std::string out;
    auto& q = queues_[dest];
    while (!q.empty() && out.size() + q.front().size() + kFrame <= grant) {
      PutFixed64(&out, q.front().size());
      out += q.front();
      queued_[dest] -= q.front().size() + kFrame;
      total_ -= q.front().size() + kFrame;
      stats->bytes_sent += q.front().size();
      ++stats->items_sent;
      q.pop_front();
    }
    return out;
  }

 private:
  std::vector<std::deque<std::string>> queues_;
  std::vector<uint64_t> queued_;
  uint64_t total_ = 0;
  bool done_ = false;
  ExchangeSource* source_;
  const ExchangeOptions& o_;
};

Status Deliver(Rank source, std::string_view data, const ExchangeSink& sink, ExchangeStats* stats) {
  while (!data.empty()) {
    if (data.size() < kFrame) return Internal("exchange: torn item frame");
    uint64_t n = DecodeFixed64(data.data());
    if (n > data.size() - kFrame) return Internal("exchange: torn item frame");
    SLUICE_RETURN_IF_ERROR(sink(source, data.substr(kFrame, n)));
    ++stats->items_received;
    stats->bytes_received += n;
    data.remove_prefix(kFrame + n);
  }
  return Status::OK();
}

}  // namespace

Result<ExchangeStats> Exchange(Transport* t, ExchangeSource* source, const ExchangeSink& sink,
                               const ExchangeOptions& options) {
  const int ranks = t->size();
  const uint64_t receive_budget = options.budget_bytes / 2;
  Outbox outbox(ranks, source, options);
  ExchangeStats stats;
  Status local;  // this rank's first error; the others learn that one happened
  std::vector<uint64_t> offered(ranks), first(ranks);
  for (uint64_t round = 0;; ++round) {
    if (local.ok()) local = outbox.Fill();
    SLUICE_ASSIGN_OR_RETURN(
        auto sums, t->AllReduceSum({local.ok() ? outbox.pending() : 0, local.ok() ? 0u : 1u}));
    if (sums[1] > 0) {
      SLUICE_RETURN_IF_ERROR(AgreeOnStatus(t, local));
      return Internal(options.stage + ": a rank failed without an error");
    }
    if (sums[0] == 0) break;
    stats.rounds = round + 1;
    outbox.Offers(receive_budget, &offered, &first);
    SLUICE_ASSIGN_OR_RETURN(auto in_offered, t->AllToAllCounts(offered));
    SLUICE_ASSIGN_OR_RETURN(auto in_first, t->AllToAllCounts(first));
    auto grants = Grants(in_offered, in_first, receive_budget, round);
    SLUICE_ASSIGN_OR_RETURN(auto my_grants, t->AllToAllCounts(grants));
    std::vector<std::string> outgoing(ranks);
    for (int d = 0; d < ranks; ++d) outgoing[d] = outbox.Take(d, my_grants[d], &stats);
    SLUICE_ASSIGN_OR_RETURN(auto incoming, t->AllToAll(outgoing));
    for (int s = 0; s < ranks && local.ok(); ++s) {
      local = Deliver(s, incoming[s], sink, &stats);
    }
  }
  return stats;
}

}  // namespace sluice::dist

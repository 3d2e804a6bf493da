// N ranks as threads of one process. Collectives are one generation-counted all-gather: each
// rank deposits its contribution; the last to arrive publishes the set and wakes the others.
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "sluice/dist/transport.h"

namespace sluice::dist {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

namespace {

class Hub {
 public:
  explicit Hub(int ranks) : mailboxes_(ranks), slots_(ranks) {}

  Status Send(Rank from, Rank to, int tag, ByteView data) {
    std::lock_guard lock(mu_);
    if (aborted_) return AbortedError();
    mailboxes_[to].push_back({from, tag, std::string(data)});
    return Status::OK();
  }

  Result<std::optional<Message>> TryReceive(Rank self) {
    std::lock_guard lock(mu_);
    if (aborted_) return AbortedError();
    if (mailboxes_[self].empty()) return std::optional<Message>();
    Message m = std::move(mailboxes_[self].front());
    mailboxes_[self].pop_front();
    return std::optional<Message>(std::move(m));
  }

  // Every rank's contribution, in rank order.
  Result<std::shared_ptr<const std::vector<std::string>>> Gather(Rank self, std::string mine) {
    std::unique_lock lock(mu_);
    if (aborted_) return AbortedError();
    uint64_t generation = generation_;
    slots_[self] = std::move(mine);
    if (++arrived_ == static_cast<int>(slots_.size())) {
      result_ = std::make_shared<const std::vector<std::string>>(std::move(slots_));
      slots_.assign(result_->size(), std::string());
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
      if (generation_ == generation) return AbortedError();
    }
    return result_;
  }

  void Abort(Rank rank, int exit_code) {
    std::lock_guard lock(mu_);
    if (!aborted_)
      abort_reason_ = "rank " + std::to_string(rank) + " aborted the job (exit code " +
                      std::to_string(exit_code) + ")";
    aborted_ = true;
    changed_.notify_all();
  }

 private:
  Status AbortedError() const { return Cancelled(abort_reason_); }

  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::deque<Message>> mailboxes_;  // guarded by mu_
  std::vector<std::string> slots_;              // guarded by mu_
  std::shared_ptr<const std::vector<std::string>> result_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::string abort_reason_;
};

// A vector of strings as one string (u64 count, then u64 length + bytes each).
std::string Pack(const std::vector<std::string>& parts) {
  std::string out;
  PutFixed64(&out, parts.size());
  for (const auto& p : parts) {
    PutFixed64(&out, p.size());
    out += p;
  }
  return out;
}

// Part `i` of a Pack()ed string.
std::string_view Unpack(std::string_view packed, size_t i) {
  size_t pos = 8;
  for (size_t k = 0;; ++k) {
    uint64_t n = DecodeFixed64(packed.data() + pos);
    if (k == i) return packed.substr(pos + 8, n);
    pos += 8 + n;
  }
}

std::string PackCounts(const std::vector<uint64_t>& values) {
  std::string out;
  for (uint64_t v : values) PutFixed64(&out, v);
  return out;
}

class InProcessTransport final : public Transport {
 public:
  InProcessTransport(std::shared_ptr<Hub> hub, Rank rank, int size, std::string host)
      : hub_(std::move(hub)), rank_(rank), size_(size), host_(std::move(host)) {}

  Rank rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& host() const override { return host_; }

  Status Send(Rank dest, int tag, ByteView data) override {
    if (dest < 0 || dest >= size_) return InvalidArgument("Send: no rank " + std::to_string(dest));
    return hub_->Send(rank_, dest, tag, data);
  }
  Result<std::optional<Message>> TryReceive() override { return hub_->TryReceive(rank_); }

  Status Barrier() override { return hub_->Gather(rank_, "").status(); }

  Result<std::string> Broadcast(std::string data, Rank root) override {
    SLUICE_ASSIGN_OR_RETURN(auto all, hub_->Gather(rank_, rank_ == root ? std::move(data) : ""));
    return (*all)[root];
  }

  Result<std::vector<std::string>> AllGather(ByteView mine) override {
    SLUICE_ASSIGN_OR_RETURN(auto all, hub_->Gather(rank_, std::string(mine)));
    return *all;
  }

  Result<std::vector<std::string>> AllToAll(const std::vector<std::string>& outgoing) override {
    if (static_cast<int>(outgoing.size()) != size_) return InvalidArgument("AllToAll: bad size");
    SLUICE_ASSIGN_OR_RETURN(auto all, hub_->Gather(rank_, Pack(outgoing)));
    std::vector<std::string> incoming(size_);
    for (int s = 0; s < size_; ++s) incoming[s] = std::string(Unpack((*all)[s], rank_));
    return incoming;
  }

  Result<std::vector<uint64_t>> AllToAllCounts(const std::vector<uint64_t>& outgoing) override {
    if (static_cast<int>(outgoing.size()) != size_) return InvalidArgument("AllToAll: bad size");
    SLUICE_ASSIGN_OR_RETURN(auto all, hub_->Gather(rank_, PackCounts(outgoing)));
    std::vector<uint64_t> incoming(size_);
    for (int s = 0; s < size_; ++s) incoming[s] = DecodeFixed64((*all)[s].data() + 8 * rank_);
    return incoming;
  }

  Result<std::vector<uint64_t>> AllReduceSum(const std::vector<uint64_t>& values) override {
    SLUICE_ASSIGN_OR_RETURN(auto all, hub_->Gather(rank_, PackCounts(values)));
    std::vector<uint64_t> sum(values.size(), 0);
    for (const auto& packed : *all) {
      if (packed.size() != 8 * values.size()) return InvalidArgument("AllReduceSum: sizes differ");
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += DecodeFixed64(packed.data() + 8 * i);
    }
    return sum;
  }

  void Abort(int exit_code) override { hub_->Abort(rank_, exit_code); }

 private:
  std::shared_ptr<Hub> hub_;
  const Rank rank_;
  const int size_;
  const std::string host_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> InProcessGroup(int ranks, std::vector<std::string> hosts) {
  auto hub = std::make_shared<Hub>(ranks);
  std::vector<std::unique_ptr<Transport>> group;
  for (int r = 0; r < ranks; ++r) {
    std::string host = r < static_cast<int>(hosts.size()) ? hosts[r] : HostName();
    group.push_back(std::make_unique<InProcessTransport>(hub, r, ranks, std::move(host)));
  }
  return group;
}

}  // namespace sluice::dist

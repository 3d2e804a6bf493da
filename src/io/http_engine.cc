// HttpEngine: one thread owns the curl multi handle and loops perform / collect / poll
// (curl docs/examples/10-at-a-time.c), topping up to max_in_flight as transfers end. Other
// threads only touch the inbox under mu_ and wake the loop with curl_multi_wakeup. Retries,
// hedges, deadlines are timers on the loop's heap; cancelling removes easy handles from the
// loop, never from inside a curl callback.
#include "sluice/io/http_engine.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <queue>
#include <random>
#include <thread>
#include <unordered_map>

#include "io/http_transfer.h"
#include "io/url.h"

namespace sluice::io {

using internal::Clock;
using internal::Transfer;

const std::string* FindHeader(const HttpHeaders& headers, std::string_view name) {
  const std::string lower = internal::AsciiLower(name);
  for (const auto& [key, value] : headers) {
    if (internal::AsciiLower(key) == lower) return &value;
  }
  return nullptr;
}

const std::string* HttpResponse::Header(std::string_view name) const {
  return FindHeader(headers, name);
}

namespace {

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string Attempts(int n) { return std::to_string(n) + (n == 1 ? " attempt" : " attempts"); }

}  // namespace

class HttpEngine::Impl {
 public:
  explicit Impl(HttpEngineOptions options);
  ~Impl();

  RequestId Submit(HttpRequest request, HttpCallback done);
  void Cancel(RequestId id);
  HttpEngineStats Stats() const;

  const HttpEngineOptions options_;

 private:
  // A submitted request. Owned by the engine thread once taken from the inbox.
  struct Pending {
    RequestId id = 0;
    HttpRequest request;
    HttpCallback done;
    const RetryPolicy* retry = nullptr;
    Clock::time_point deadline;
    int attempts = 0;                  // attempts started, duplicates not counted
    std::vector<Transfer*> transfers;  // running: the attempt and perhaps its duplicate
    bool hedged = false;               // the running attempt has a duplicate
    bool first_byte_seen = false;      // of the running attempt
    bool waiting = true;               // for a slot or a retry timer (counted in queued_)
    Clock::time_point attempt_started;
    std::string last_error;  // the latest failed attempt, for the final error
  };
  enum class TimerKind { kRetry, kHedge, kHedgeOverdue, kDeadline };
  struct Timer {
    Clock::time_point at;
    RequestId id;
    TimerKind kind;
    int attempt;  // the attempt a retry or hedge timer belongs to
    bool operator>(const Timer& o) const { return at > o.at; }
  };

  void Loop();
  void LoopWithoutCurl();
  void Wake();       // wakes the engine thread; from any thread
  bool TakeInbox();  // false once stopping
  void StartReady();
  void StartTransfer(Pending* p, bool hedge);
  void HandleFirstBytes();
  void CollectDone();
  void OnTransferDone(Transfer* t, CURLcode code);
  void FireTimers();
  void HedgeWaiting();
  bool Hedge(Pending* p, int attempt, bool overdue);
  // Attempt `attempt` of p runs alone and has no first byte yet.
  static bool Hedgeable(const Pending& p, int attempt) {
    return p.attempts == attempt && p.transfers.size() == 1 && !p.first_byte_seen;
  }
  void ScanCancelTokens();
  void Finish(Pending* p, Result<HttpResponse> result);
  void DropTransfer(Pending* p, Transfer* t);
  std::string Describe(const Pending& p) const;
  int PollTimeoutMs() const;

  // The only lock. It guards the inbox; everything after it belongs to the engine thread.
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Pending>> inbox_;  // guarded by mu_
  std::vector<RequestId> cancels_;               // guarded by mu_
  bool stopping_ = false;                        // guarded by mu_

  // Why libcurl could not be loaded (then curl_ is null and every request fails with it).
  Status curl_error_;
  std::condition_variable curl_missing_wake_;  // wakes LoopWithoutCurl; with mu_

  std::atomic<RequestId> next_id_{1};
  const internal::CurlApi* curl_ = nullptr;
  CURLM* multi_ = nullptr;
  std::unordered_map<RequestId, std::unique_ptr<Pending>> pending_;
  std::deque<RequestId> ready_;  // waiting for a slot (ids of finished requests are skipped)
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  std::vector<CURL*> idle_handles_;
  internal::FirstByteSink first_bytes_;
  size_t running_ = 0;      // transfers counted against max_in_flight (duplicates are not)
  size_t cancellable_ = 0;  // pending requests with a cancel token
  uint64_t latency_updates_ = 0;
  Clock::time_point next_cancel_scan_;
  HedgePolicy hedge_;
  // Requests past their hedge delay that found the budget empty, oldest first, with the
  // attempt they were waiting in: the next tokens go to them (normal-tail requests leave
  // by answering; the stuck ones stay and get hedged).
  std::deque<std::pair<RequestId, int>> hedge_waiting_;
  std::mt19937_64 rng_;
  std::shared_ptr<const RetryPolicy> default_retry_;
  internal::TransferLimits limits_;

  // Stats, written by the engine thread (in_flight, queued also by Submit).
  std::atomic<uint64_t> in_flight_{0}, queued_{0}, requests_{0}, failed_{0}, attempts_{0},
      retries_{0}, hedges_{0}, hedges_won_{0}, bytes_received_{0}, bytes_sent_{0};
  std::atomic<double> first_byte_p50_ms_{0}, first_byte_p95_ms_{0};

  std::thread thread_;  // last: starts after every member above exists
};

HttpEngine::Impl::Impl(HttpEngineOptions options)
    : options_(std::move(options)),
      hedge_(options_.hedge),
      rng_(options_.seed != 0 ? options_.seed
                              : static_cast<uint64_t>(Clock::now().time_since_epoch().count())),
      default_retry_(options_.retry != nullptr ? options_.retry
                                               : std::make_shared<const RetryPolicy>()),
      limits_{options_.connect_timeout, options_.stall_timeout, options_.max_body_bytes} {
  Result<const internal::CurlApi*> curl = internal::LoadCurl();
  if (!curl.ok()) {
    curl_error_ = curl.status();
    thread_ = std::thread([this] { LoopWithoutCurl(); });
    return;
  }
  curl_ = *curl;
  multi_ = curl_->multi_init();
  // Keep a connection per transfer slot for reuse; we cap concurrency ourselves.
  curl_->multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(options_.max_in_flight * 2));
  thread_ = std::thread([this] { Loop(); });
}

HttpEngine::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  Wake();
  thread_.join();
  if (curl_ == nullptr) return;
  for (CURL* e : idle_handles_) curl_->easy_cleanup(e);
  curl_->multi_cleanup(multi_);
}

void HttpEngine::Impl::Wake() {
  if (curl_ != nullptr) {
    curl_->multi_wakeup(multi_);
  } else {
    curl_missing_wake_.notify_one();
  }
}

HttpEngine::RequestId HttpEngine::Impl::Submit(HttpRequest request, HttpCallback done) {
  auto p = std::make_unique<Pending>();
  p->id = next_id_.fetch_add(1);
  p->request = std::move(request);
  p->done = std::move(done);
  const RequestId id = p->id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(std::move(p));
  }
  queued_.fetch_add(1, std::memory_order_relaxed);
  Wake();
  return id;
}

void HttpEngine::Impl::Cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(id);
  }
  Wake();
}

HttpEngineStats HttpEngine::Impl::Stats() const {
  HttpEngineStats s;
  s.in_flight = in_flight_.load(std::memory_order_relaxed);
  s.queued = queued_.load(std::memory_order_relaxed);
  s.requests = requests_.load(std::memory_order_relaxed);
  s.failed = failed_.load(std::memory_order_relaxed);
  s.attempts = attempts_.load(std::memory_order_relaxed);
  s.retries = retries_.load(std::memory_order_relaxed);
  s.hedges = hedges_.load(std::memory_order_relaxed);
  s.hedges_won = hedges_won_.load(std::memory_order_relaxed);
  s.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  s.bytes_sent = bytes_sent_.load(std::memory_order_relaxed);
  s.first_byte_p50_ms = first_byte_p50_ms_.load(std::memory_order_relaxed);
  s.first_byte_p95_ms = first_byte_p95_ms_.load(std::memory_order_relaxed);
  return s;
}

void HttpEngine::Impl::Loop() {
  while (TakeInbox()) {
    FireTimers();
    StartReady();
    int still_running = 0;
    curl_->multi_perform(multi_, &still_running);
    HandleFirstBytes();
    CollectDone();
    StartReady();
    if (cancellable_ > 0 && Clock::now() >= next_cancel_scan_) ScanCancelTokens();
    curl_->multi_poll(multi_, nullptr, 0, PollTimeoutMs(), nullptr);
  }
  // Shutting down: every request still here ends with Cancelled.
  std::vector<RequestId> ids;
  for (const auto& [id, p] : pending_) ids.push_back(id);
  for (RequestId id : ids) {
    auto it = pending_.find(id);
    if (it != pending_.end()) {
      Finish(it->second.get(), Cancelled(Describe(*it->second) + ": HTTP engine shut down"));
    }
  }
}

// Without libcurl the engine still keeps its contract (each callback runs once, on this
// thread, never inside Submit): every request fails at once with why libcurl is missing.
void HttpEngine::Impl::LoopWithoutCurl() {
  for (bool running = true; running;) {
    running = TakeInbox();
    while (!pending_.empty()) {
      Pending* p = pending_.begin()->second.get();
      Finish(p, curl_error_.WithContext(Describe(*p)));
    }
    ready_.clear();
    timers_ = {};
    std::unique_lock<std::mutex> lock(mu_);
    curl_missing_wake_.wait(lock,
                            [this] { return stopping_ || !inbox_.empty() || !cancels_.empty(); });
  }
}

bool HttpEngine::Impl::TakeInbox() {
  std::vector<std::unique_ptr<Pending>> arrived;
  std::vector<RequestId> cancels;
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    arrived.swap(inbox_);
    cancels.swap(cancels_);
    stopping = stopping_;
  }
  const Clock::time_point now = Clock::now();
  for (auto& p : arrived) {
    Pending* raw = p.get();
    raw->retry = raw->request.retry_policy != nullptr ? raw->request.retry_policy.get()
                                                      : default_retry_.get();
    const auto timeout =
        raw->request.timeout.count() > 0 ? raw->request.timeout : options_.request_timeout;
    raw->deadline = now + timeout;
    if (raw->request.cancel != nullptr) ++cancellable_;
    pending_.emplace(raw->id, std::move(p));
    timers_.push({raw->deadline, raw->id, TimerKind::kDeadline, 0});
    ready_.push_back(raw->id);
  }
  for (RequestId id : cancels) {
    auto it = pending_.find(id);
    if (it != pending_.end())
      Finish(it->second.get(), Cancelled(Describe(*it->second) + ": cancelled"));
  }
  if (!arrived.empty() && cancellable_ > 0) ScanCancelTokens();  // already-cancelled readers
  return !stopping;
}

void HttpEngine::Impl::StartReady() {
  while (running_ < options_.max_in_flight && !ready_.empty()) {
    RequestId id = ready_.front();
    ready_.pop_front();
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;  // finished (cancelled) while waiting
    Pending* p = it->second.get();
    ++p->attempts;
    if (p->attempts > 1) retries_.fetch_add(1, std::memory_order_relaxed);
    p->hedged = false;
    p->first_byte_seen = false;
    p->attempt_started = Clock::now();
    p->waiting = false;
    queued_.fetch_sub(1, std::memory_order_relaxed);
    StartTransfer(p, /*hedge=*/false);
    if (p->request.hedge) {
      hedge_.OnRequest();
      if (auto delay = hedge_.Delay(HedgePolicy::SizeClass(p->request.expected_body_bytes))) {
        timers_.push({p->attempt_started + *delay, p->id, TimerKind::kHedge, p->attempts});
      }
      HedgeWaiting();
    }
  }
}

// Spends the budget's tokens on the waiting requests that still have no first byte.
void HttpEngine::Impl::HedgeWaiting() {
  while (!hedge_waiting_.empty()) {
    const auto [id, attempt] = hedge_waiting_.front();
    auto it = pending_.find(id);
    Pending* p = it == pending_.end() ? nullptr : it->second.get();
    if (p != nullptr && Hedgeable(*p, attempt) && !Hedge(p, attempt, /*overdue=*/false)) {
      return;  // waits for a token
    }
    hedge_waiting_.pop_front();
  }
}

// Duplicates attempt `attempt` of `p` if it still runs alone without a first byte and the
// budget allows (`overdue`: it may borrow).
bool HttpEngine::Impl::Hedge(Pending* p, int attempt, bool overdue) {
  if (!Hedgeable(*p, attempt)) return false;
  if (!hedge_.TryHedge(overdue)) return false;
  p->hedged = true;
  hedges_.fetch_add(1, std::memory_order_relaxed);
  StartTransfer(p, /*hedge=*/true);
  return true;
}

void HttpEngine::Impl::StartTransfer(Pending* p, bool hedge) {
  auto* t = new Transfer;
  if (!idle_handles_.empty()) {
    t->easy = idle_handles_.back();
    idle_handles_.pop_back();
  } else {
    t->easy = curl_->easy_init();
  }
  t->request_id = p->id;
  t->is_hedge = hedge;
  t->started = Clock::now();
  t->first_byte_sink = &first_bytes_;
  // Each attempt is signed afresh (its own date), on a copy of the request's headers.
  if (p->request.signer != nullptr) {
    HttpRequest attempt = p->request;
    p->request.signer->Sign(std::chrono::system_clock::now(), &attempt);
    internal::SetUpTransfer(attempt, limits_, t);
  } else {
    internal::SetUpTransfer(p->request, limits_, t);
  }
  p->transfers.push_back(t);
  if (!hedge) ++running_;
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  attempts_.fetch_add(1, std::memory_order_relaxed);
  if (p->request.body != nullptr) {
    bytes_sent_.fetch_add(p->request.body->size(), std::memory_order_relaxed);
  }
  curl_->multi_add_handle(multi_, t->easy);
}

// Removes one transfer of `p` (finished, lost a hedge race, or cancelled) and recycles its
// handle. Never called from inside a curl callback.
void HttpEngine::Impl::DropTransfer(Pending* p, Transfer* t) {
  curl_->multi_remove_handle(multi_, t->easy);
  auto& list = p->transfers;
  list.erase(std::remove(list.begin(), list.end(), t), list.end());
  if (!t->is_hedge) --running_;
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  curl_->easy_reset(t->easy);
  idle_handles_.push_back(t->easy);
  t->easy = nullptr;
  delete t;
}

void HttpEngine::Impl::HandleFirstBytes() {
  auto arrivals = std::move(first_bytes_);
  first_bytes_.clear();
  for (const auto& [id, t] : arrivals) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    Pending* p = it->second.get();
    auto& list = p->transfers;
    if (std::find(list.begin(), list.end(), t) == list.end()) continue;  // already dropped
    if (p->first_byte_seen) continue;
    p->first_byte_seen = true;
    if (p->request.hedge) {
      hedge_.RecordFirstByte(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - p->attempt_started),
          HedgePolicy::SizeClass(p->request.expected_body_bytes));
    }
    if (t->is_hedge) hedges_won_.fetch_add(1, std::memory_order_relaxed);
    // The first to answer wins; the other transfer of this attempt is removed.
    std::vector<Transfer*> losers;
    for (Transfer* other : list) {
      if (other != t) losers.push_back(other);
    }
    for (Transfer* loser : losers) DropTransfer(p, loser);
    if (t->is_hedge) {  // the winner now holds the attempt's slot
      t->is_hedge = false;
      ++running_;
    }
  }
  if (!arrivals.empty() && ++latency_updates_ % 64 == 1) {  // quantiles cost a partial sort
    const size_t busiest = hedge_.BusiestClass();
    first_byte_p50_ms_.store(hedge_.Quantile(0.5, busiest) / 1000.0, std::memory_order_relaxed);
    first_byte_p95_ms_.store(hedge_.Quantile(0.95, busiest) / 1000.0, std::memory_order_relaxed);
  }
}

void HttpEngine::Impl::CollectDone() {
  int left = 0;
  while (CURLMsg* msg = curl_->multi_info_read(multi_, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
    OnTransferDone(t, msg->data.result);
  }
}

void HttpEngine::Impl::OnTransferDone(Transfer* t, CURLcode code) {
  Pending* p = pending_.at(t->request_id).get();  // a transfer never outlives its request
  long status = 0;
  curl_->easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status != 0) t->response.status = status;
  internal::AttemptResult result = internal::ClassifyAttempt(code, *t, p->request, *p->retry);
  HttpResponse response = std::move(t->response);
  const bool was_hedge = t->is_hedge;
  DropTransfer(p, t);
  bytes_received_.fetch_add(response.body.size(), std::memory_order_relaxed);
  if (!result.failure.has_value()) {
    response.attempts = p->attempts;
    response.hedged = p->hedged;
    Finish(p, std::move(response));
    return;
  }
  p->last_error = result.description + (was_hedge ? " (hedged duplicate)" : "");
  if (!p->transfers.empty()) return;  // the other transfer of this attempt may still answer
  const Clock::time_point now = Clock::now();
  if (p->request.retry && p->retry->ShouldRetry(*result.failure, p->attempts)) {
    const auto delay = p->retry->Delay(p->attempts, rng_());
    if (now + delay < p->deadline) {
      p->waiting = true;
      queued_.fetch_add(1, std::memory_order_relaxed);
      timers_.push({now + delay, p->id, TimerKind::kRetry, p->attempts});
      return;
    }
  }
  if (result.failure->kind == AttemptFailure::Kind::kStatus) {
    response.attempts = p->attempts;
    response.hedged = p->hedged;
    Finish(p, std::move(response));  // an HTTP error: the caller decodes it
    return;
  }
  Finish(p, IoError(Describe(*p) + ": " + p->last_error + " after " + Attempts(p->attempts)));
}

void HttpEngine::Impl::FireTimers() {
  const Clock::time_point now = Clock::now();
  while (!timers_.empty() && timers_.top().at <= now) {
    Timer timer = timers_.top();
    timers_.pop();
    auto it = pending_.find(timer.id);
    if (it == pending_.end()) continue;  // finished already
    Pending* p = it->second.get();
    switch (timer.kind) {
      case TimerKind::kRetry:
        if (p->transfers.empty() && p->attempts == timer.attempt) ready_.push_front(p->id);
        break;
      case TimerKind::kHedge:
        if (Hedgeable(*p, timer.attempt)) {
          hedge_waiting_.emplace_back(p->id, p->attempts);
          HedgeWaiting();  // hedged now unless older requests wait for the budget
          if (!p->hedged && hedge_.overdue_multiple() > 0) {  // else it may borrow later
            const auto delay = timer.at - p->attempt_started;
            timers_.push({p->attempt_started + std::chrono::duration_cast<Clock::duration>(
                                                   delay * hedge_.overdue_multiple()),
                          p->id, TimerKind::kHedgeOverdue, p->attempts});
          }
        }
        break;
      case TimerKind::kHedgeOverdue:
        (void)Hedge(p, timer.attempt, /*overdue=*/true);  // its queue entry is skipped later
        break;
      case TimerKind::kDeadline: {
        const auto timeout =
            p->request.timeout.count() > 0 ? p->request.timeout : options_.request_timeout;
        std::string last = p->last_error.empty() ? "" : "; last failure: " + p->last_error;
        Finish(p, IoError(Describe(*p) + ": no complete response within " + Seconds(timeout) +
                          " (" + Attempts(p->attempts) + last + ")"));
        break;
      }
    }
  }
}

void HttpEngine::Impl::ScanCancelTokens() {
  next_cancel_scan_ = Clock::now() + std::chrono::milliseconds(20);
  std::vector<Pending*> cancelled;
  for (const auto& [id, p] : pending_) {
    if (p->request.cancel != nullptr && p->request.cancel->cancelled())
      cancelled.push_back(p.get());
  }
  for (Pending* p : cancelled) Finish(p, Cancelled(Describe(*p) + ": cancelled"));
}

void HttpEngine::Impl::Finish(Pending* p, Result<HttpResponse> result) {
  while (!p->transfers.empty()) DropTransfer(p, p->transfers.back());
  if (p->request.cancel != nullptr) --cancellable_;
  if (p->waiting) queued_.fetch_sub(1, std::memory_order_relaxed);
  requests_.fetch_add(1, std::memory_order_relaxed);
  if (!result.ok()) failed_.fetch_add(1, std::memory_order_relaxed);
  HttpCallback done = std::move(p->done);
  pending_.erase(p->id);  // p is gone from here on
  done(std::move(result));
}

std::string HttpEngine::Impl::Describe(const Pending& p) const {
  std::string what = p.request.method + " " + RedactUrl(p.request.url);
  return p.request.label.empty() ? what : p.request.label + " (" + what + ")";
}

int HttpEngine::Impl::PollTimeoutMs() const {
  auto wait = std::chrono::milliseconds(1000);
  const Clock::time_point now = Clock::now();
  if (!timers_.empty()) {
    wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(
                              timers_.top().at - now + std::chrono::microseconds(999)));
  }
  if (cancellable_ > 0) wait = std::min(wait, std::chrono::milliseconds(20));
  return static_cast<int>(std::max<int64_t>(0, wait.count()));
}

HttpEngine::HttpEngine(HttpEngineOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  internal::RegisterEngine(this);
}

HttpEngine::~HttpEngine() {
  internal::UnregisterEngine(this);
  impl_.reset();
}

HttpEngine::RequestId HttpEngine::Submit(HttpRequest request, HttpCallback done) {
  return impl_->Submit(std::move(request), std::move(done));
}

void HttpEngine::Cancel(RequestId id) { impl_->Cancel(id); }

Result<HttpResponse> HttpEngine::Call(HttpRequest request) {
  std::promise<Result<HttpResponse>> promise;
  auto future = promise.get_future();
  Submit(std::move(request),
         [&promise](Result<HttpResponse> r) { promise.set_value(std::move(r)); });
  return future.get();
}

HttpEngineStats HttpEngine::stats() const { return impl_->Stats(); }
const HttpEngineOptions& HttpEngine::options() const { return impl_->options_; }

}  // namespace sluice::io

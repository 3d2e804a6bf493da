// OrderedParallelMap: process items on several threads, consume the results in input order.
// This is what makes `convert` output byte-identical for any --threads value.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::cli {

// Calls produce(i) for every i in [0, n) on `threads` worker threads and consume(i, result)
// on the calling thread for i = 0, 1, 2, ... in order. At most `window` items are claimed
// ahead of the consumer, which bounds the memory held by finished-but-unconsumed results.
// consume returns false to stop early: unclaimed items are then never produced.
// produce must be safe to call concurrently; consume runs on the caller's thread only.
template <typename T>
void OrderedParallelMap(size_t n, size_t threads, size_t window,
                        const std::function<T(size_t)>& produce,
                        const std::function<bool(size_t, T&&)>& consume) {
  threads = std::max<size_t>(1, threads);
  window = std::max(window, threads);
  std::mutex mu;
  std::condition_variable can_claim, can_consume;
  std::map<size_t, T> ready;  // guarded by mu
  size_t next_claim = 0;      // guarded by mu
  size_t next_consume = 0;    // guarded by mu
  bool stop = false;          // guarded by mu

  auto worker = [&] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      can_claim.wait(lock,
                     [&] { return stop || next_claim >= n || next_claim < next_consume + window; });
      if (stop || next_claim >= n) return;
      size_t i = next_claim++;
      lock.unlock();
      T result = produce(i);
      lock.lock();
      ready.emplace(i, std::move(result));
      if (i == next_consume) can_consume.notify_one();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::min(threads, n); ++t) pool.emplace_back(worker);

  for (size_t i = 0; i < n; ++i) {
    std::unique_lock<std::mutex> lock(mu);
    can_consume.wait(lock, [&] { return ready.count(i) > 0; });
    T result = std::move(ready.at(i));
    ready.erase(i);
    next_consume = i + 1;
    lock.unlock();
    can_claim.notify_all();
    if (!consume(i, std::move(result))) {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
      break;
    }
  }
  can_claim.notify_all();
  for (auto& t : pool) t.join();
}

}  // namespace sluice::cli

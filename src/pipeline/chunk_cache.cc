// ChunkCache (chunk_cache.h): admission along the plan, asynchronous fetches, decodes on the
// pool, on-demand loads by readers, release at window ends, eviction under pressure.
#include "chunk_cache.h"

#include <utility>

#include "buffer_recycler.h"
#include "sluice/pipeline/wait_check.h"

namespace sluice::pipeline {

ChargedChunk::~ChargedChunk() {
  if (budget != nullptr) budget->Release(bytes);
  BufferRecycler::Get().Give(std::move(chunk.bytes));
}

ChunkCache::ChunkCache(PipelineContext* ctx, StageCounters* counters, const RecordSource* source,
                       std::shared_ptr<const SnapshotChunks> chunks, ChunkPlan plan,
                       Options options)
    : ctx_(ctx),
      counters_(counters),
      source_(source),
      chunks_(std::move(chunks)),
      options_(options),
      plan_(std::move(plan)) {
  gate_->cache = this;
  if (options_.kept) AdoptKept();
}

void ChunkCache::AdoptKept() {
  // All fit: the read gives a cache its KeptChunks only when every chunk of the snapshot
  // does, and the chunk numbers are the snapshot's (one KeptChunks per read).
  for (auto& [chunk, data] : options_.kept->Take()) {
    Entry& e = EntryLocked(chunk);
    data->budget = ctx_->budget();
    data->budget->Charge(data->bytes);
    e.state = State::kReady;
    e.data = std::move(data);
    e.reserved = true;
    e.released = true;  // no window holds it yet
    e.kept = true;
    reserved_ += e.info.decoded_bytes;
  }
}

void ChunkCache::UseLocked(Entry* e) {
  if (!e->kept) return;
  e->kept = false;
  counters_->Add(counters_->chunk_kept, 1);
}

ChunkCache::~ChunkCache() {
  {
    std::lock_guard<std::mutex> g(gate_->mu);
    gate_->cache = nullptr;  // queued decode tasks will find the gate closed
  }
  Stop();
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] { return fetching_ == 0 && decoding_now_ == 0; });
  l.unlock();
  Finish();  // nothing runs any more: every ready chunk no reader holds goes
}

void ChunkCache::Finish() {
  if (!options_.kept) return;
  std::unique_lock<std::mutex> l(mu_);
  KeptChunks::Chunks ready = TakeReadyLocked();
  l.unlock();
  options_.kept->Put(std::move(ready), options_.capacity_bytes);
}

KeptChunks::Chunks ChunkCache::TakeReadyLocked() {
  KeptChunks::Chunks ready;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    // A chunk a reader holds stays charged to this pipeline's budget: not kept. (A window
    // may still hold one at the end of the stream: its last records dropped under skip.)
    if (e.state != State::kReady || e.waiters > 0 || e.data.use_count() != 1) {
      ++it;
      continue;
    }
    e.data->budget->Release(e.data->bytes);
    e.data->budget = nullptr;
    // A recycled buffer may be far longer than the chunk: kept for epochs, it goes to size.
    std::string& bytes = e.data->chunk.bytes;
    if (bytes.capacity() - bytes.size() > bytes.size() / 4 + (uint64_t{64} << 10)) {
      bytes.shrink_to_fit();
      e.data->bytes = e.data->chunk.memory_bytes();
    }
    ready.emplace(it->first, std::move(e.data));
    if (e.reserved) reserved_ -= e.info.decoded_bytes;
    it = entries_.erase(it);
  }
  return ready;
}

void ChunkCache::Stop() {
  std::lock_guard<std::mutex> l(mu_);
  stopping_ = true;
  cancel_->Cancel();
  cv_.notify_all();
}

ChunkCache::Entry& ChunkCache::EntryLocked(uint64_t chunk) {
  auto [it, fresh] = entries_.try_emplace(chunk);
  if (fresh) {
    it->second.shard = chunks_->ShardOf(chunk);
    it->second.info = chunks_->Info(chunk);
  }
  return it->second;
}

void ChunkCache::Pulled(uint64_t k) {
  std::lock_guard<std::mutex> l(mu_);
  pulled_ = std::max(pulled_, k);
  while (!ahead_.empty() && ahead_.front().first < pulled_) {
    ahead_bytes_ -= ahead_.front().second;
    ahead_.pop_front();
  }
  PumpLocked();
}

void ChunkCache::Delivered(uint64_t k) {
  if (k <= next_release_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> l(mu_);
  while (!releases_.empty() && releases_.top().last_sample < k) {
    const uint64_t chunk = releases_.top().chunk;
    releases_.pop();
    auto it = entries_.find(chunk);
    if (it == entries_.end() || it->second.holds == 0) continue;
    if (--it->second.holds == 0) {
      it->second.released = true;
      EraseIfReleasedLocked(chunk);
    }
  }
  next_release_.store(releases_.empty() ? UINT64_MAX : releases_.top().last_sample,
                      std::memory_order_relaxed);
  PumpLocked();
}

void ChunkCache::PumpLocked() {
  if (stopping_) return;
  while (!plan_done_) {  // admit the plan's needs while their decoded bytes fit
    if (!next_need_) {
      ChunkNeed need;
      if (!plan_.Next(&need)) {
        plan_done_ = true;
        break;
      }
      next_need_ = need;
    }
    const ChunkNeed& n = *next_need_;
    auto it = entries_.find(n.chunk);
    const bool reserve = it == entries_.end() || !it->second.reserved;
    const uint64_t bytes = n.info.decoded_bytes;
    // Needed only later: admitted while the read-ahead allows (the next pulls admit more).
    const bool ahead = n.first_sample >= pulled_;
    if (reserve && ahead && options_.read_ahead_bytes > 0 && ahead_bytes_ > 0 &&
        ahead_bytes_ + bytes > options_.read_ahead_bytes) {
      break;
    }
    if (reserve && reserved_ > 0 && reserved_ + bytes > options_.capacity_bytes &&
        !MakeRoomLocked(bytes, n.chunk, /*unheld_only=*/true)) {
      break;
    }
    Entry& e = EntryLocked(n.chunk);
    if (!e.reserved) {
      e.reserved = true;
      reserved_ += bytes;
      if (ahead && options_.read_ahead_bytes > 0) {
        ahead_.emplace_back(n.first_sample, bytes);
        ahead_bytes_ += bytes;
      }
      if (e.state == State::kQueued) fetch_queue_.push_back(n.chunk);
    }
    ++e.holds;
    e.released = false;
    UseLocked(&e);
    e.first_sample = std::min(e.first_sample, n.first_sample);
    releases_.push(Release{n.last_sample, n.chunk});
    next_release_.store(releases_.top().last_sample, std::memory_order_relaxed);
    next_need_.reset();
  }
  const uint64_t group_bytes = source_->fetch_group_bytes();
  while (fetching_ < options_.max_fetches && !fetch_queue_.empty()) {
    const uint64_t chunk = fetch_queue_.front();
    fetch_queue_.pop_front();
    if (!FetchableLocked(chunk)) continue;
    // The queue's next chunks join this fetch while each starts where the previous one ends
    // in the same shard (an unshuffled plan's), up to the source's group size.
    std::vector<uint64_t> group{chunk};
    uint64_t bytes = entries_.at(chunk).info.file_bytes;
    while (group_bytes > 0 && bytes > 0 && !fetch_queue_.empty()) {
      const uint64_t next = fetch_queue_.front();
      if (!FetchableLocked(next)) {
        fetch_queue_.pop_front();  // what the outer loop would do with it
        continue;
      }
      const Entry& last = entries_.at(group.back());
      const Entry& n = entries_.at(next);
      if (n.shard != last.shard || n.info.file_bytes == 0 ||
          n.info.file_offset != last.info.file_offset + last.info.file_bytes ||
          bytes + n.info.file_bytes > group_bytes) {
        break;
      }
      bytes += n.info.file_bytes;
      group.push_back(next);
      fetch_queue_.pop_front();
    }
    StartFetchLocked(group);
  }
  while (decode_tasks_ < options_.max_decodes && decode_tasks_ < decode_queue_.size()) {
    ++decode_tasks_;
    ctx_->pool()->Submit([gate = gate_] { RunDecodeTask(gate); });
  }
}

bool ChunkCache::FetchableLocked(uint64_t chunk) const {
  auto it = entries_.find(chunk);
  return it != entries_.end() && it->second.state == State::kQueued && it->second.reserved;
}

void ChunkCache::StartFetchLocked(const std::vector<uint64_t>& group) {
  Entry& e = entries_.at(group[0]);
  if (e.info.file_bytes == 0) {  // nothing to fetch (sources without bytes of their own)
    e.state = State::kFetched;
    decode_queue_.push_back(group[0]);
    return;
  }
  // Local files (a source that groups no fetches): a compressed chunk is fetched by its
  // decode, below.
  if (group.size() == 1 && e.info.decoded_bytes != e.info.file_bytes &&
      source_->fetch_group_bytes() == 0 && source_->fetches_now()) {
    e.state = State::kFetched;
    e.fetch_now = true;
    decode_queue_.push_back(group[0]);
    return;
  }
  for (uint64_t chunk : group) entries_.at(chunk).state = State::kFetching;
  ++fetching_;
  const io::IoContext context{nullptr, cancel_,
                              [](size_t n) { return BufferRecycler::Get().Take(n); }};
  // Fetches never call back inside the call, so holding mu_ here is fine.
  if (group.size() == 1) {
    source_->FetchChunk(
        e.shard, e.info,
        [this, group](Result<std::string> bytes) {
          if (!bytes.ok()) return OnFetched(group, bytes.status());
          std::vector<std::string> one;
          one.push_back(std::move(bytes).value());
          OnFetched(group, std::move(one));
        },
        context);
    return;
  }
  std::vector<format::ShardChunk> infos;
  for (uint64_t chunk : group) infos.push_back(entries_.at(chunk).info);
  source_->FetchChunks(
      e.shard, infos,
      [this, group](Result<std::vector<std::string>> bytes) { OnFetched(group, std::move(bytes)); },
      context);
}

void ChunkCache::OnFetched(const std::vector<uint64_t>& group,
                           Result<std::vector<std::string>> bytes) {
  std::lock_guard<std::mutex> l(mu_);
  --fetching_;
  for (size_t i = 0; i < group.size(); ++i) {
    const uint64_t chunk = group[i];
    auto it = entries_.find(chunk);
    if (it == entries_.end() || it->second.state != State::kFetching) continue;
    Entry& e = it->second;
    if (bytes.ok() && i < bytes->size()) {
      counters_->Add(counters_->chunk_fetched_bytes, (*bytes)[i].size());
      e.fetched = std::move((*bytes)[i]);
      e.state = State::kFetched;
      decode_queue_.push_back(chunk);
    } else {
      e.state = State::kFailed;
      e.error = bytes.ok() ? Internal("read: a fetch of " + std::to_string(group.size()) +
                                      " chunks returned " + std::to_string(bytes->size()))
                           : bytes.status();
    }
    EraseIfReleasedLocked(chunk);
  }
  PumpLocked();
  cv_.notify_all();
}

void ChunkCache::RunDecodeTask(const std::shared_ptr<Gate>& gate) {
  std::unique_lock<std::mutex> g(gate->mu);
  ChunkCache* cache = gate->cache;
  if (cache == nullptr) return;
  std::unique_lock<std::mutex> l(cache->mu_);
  --cache->decode_tasks_;
  uint64_t chunk = 0;
  bool claimed = false;
  while (!cache->stopping_ && !claimed && !cache->decode_queue_.empty()) {
    chunk = cache->decode_queue_.front();
    cache->decode_queue_.pop_front();
    auto it = cache->entries_.find(chunk);
    claimed = it != cache->entries_.end() && it->second.state == State::kFetched;
    if (claimed) {
      it->second.state = State::kDecoding;
      ++cache->decoding_now_;  // under the gate: the destructor now waits for this decode
    }
  }
  g.unlock();
  if (claimed) cache->DecodeClaimedLocked(chunk, &l);
  cache->PumpLocked();
  cache->cv_.notify_all();
}

void ChunkCache::DecodeClaimedLocked(uint64_t chunk, std::unique_lock<std::mutex>* lock) {
  Entry& e = entries_.at(chunk);  // a decoding entry is never erased; references stay valid
  std::string fetched = std::move(e.fetched);
  const bool fetch_now = std::exchange(e.fetch_now, false);
  const uint32_t shard = e.shard;
  const format::ShardChunk info = e.info;
  lock->unlock();
  Status s;
  if (fetch_now) {  // on this thread: no I/O thread to wake, no wake-up back
    Result<std::string> got =
        source_->FetchChunkNow(shard, info, BufferRecycler::Get().Take(info.file_bytes));
    if (got.ok()) {
      counters_->Add(counters_->chunk_fetched_bytes, got->size());
      fetched = *std::move(got);
    } else {
      s = got.status();
    }
  }
  auto charged = std::make_shared<ChargedChunk>();
  if (s.ok()) {
    charged->chunk.bytes = BufferRecycler::Get().Take(info.decoded_bytes);  // resized in place
    s = source_->DecodeChunk(shard, info, std::move(fetched), &charged->chunk);
    BufferRecycler::Get().Give(std::move(charged->chunk.spare));
    counters_->Add(counters_->chunk_decodes, 1);
  }
  charged->bytes = charged->chunk.memory_bytes();
  charged->budget = ctx_->budget();
  ctx_->budget()->Charge(charged->bytes);
  lock->lock();
  --decoding_now_;
  if (s.ok()) {
    e.state = State::kReady;
    e.data = std::move(charged);
  } else {
    e.state = State::kFailed;
    e.error = s;
  }
  cv_.notify_all();
  EraseIfReleasedLocked(chunk);
}

Result<ChunkCache::Handle> ChunkCache::Get(uint64_t chunk) {
  counters_->Add(counters_->chunk_takes, 1);
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (stopping_) return Cancelled("read: iterator cancelled");
    Entry& e = EntryLocked(chunk);
    if (!e.reserved && (e.state == State::kQueued || e.state == State::kReady)) {
      MakeRoomLocked(e.info.decoded_bytes, chunk, /*unheld_only=*/false);
      e.reserved = true;  // admitted even when nothing could be evicted: progress
      reserved_ += e.info.decoded_bytes;
      counters_->Add(counters_->chunk_loads_on_demand, 1);
    }
    switch (e.state) {
      case State::kReady:
        UseLocked(&e);
        [[fallthrough]];
      case State::kFailed: {
        Result<Handle> out =
            e.state == State::kReady ? Result<Handle>(Handle(e.data, &e.data->chunk)) : e.error;
        EraseIfReleasedLocked(chunk);
        return out;
      }
      case State::kQueued:
        StartFetchLocked({chunk});
        break;
      case State::kFetched:
        e.state = State::kDecoding;  // claimed here; a decode task finding it skips it
        ++decoding_now_;
        ++e.waiters;
        DecodeClaimedLocked(chunk, &l);
        --e.waiters;
        break;
      case State::kFetching:
      case State::kDecoding: {
        // On the consumer's thread the wait wakes for its check (Ctrl-C in Python): a fetch
        // held up by the network must not make next(it) uninterruptible.
        ++e.waiters;
        Status interrupted = WaitWithCheck(cv_, l);
        --e.waiters;
        if (!interrupted.ok()) return interrupted;
        break;
      }
    }
  }
}

void ChunkCache::EraseIfReleasedLocked(uint64_t chunk) {
  auto it = entries_.find(chunk);
  if (it == entries_.end()) return;
  const Entry& e = it->second;
  if (!e.released || e.holds > 0 || e.waiters > 0 || e.state == State::kFetching ||
      e.state == State::kDecoding || (options_.kept && e.state == State::kReady)) {
    return;
  }
  if (e.reserved) reserved_ -= e.info.decoded_bytes;
  entries_.erase(it);
}

bool ChunkCache::MakeRoomLocked(uint64_t bytes, uint64_t keep, bool unheld_only) {
  while (reserved_ + bytes > options_.capacity_bytes) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const Entry& e = it->second;
      const bool idle =
          e.state == State::kReady || e.state == State::kQueued || e.state == State::kFailed;
      if (it->first == keep || !e.reserved || !idle || e.waiters > 0) continue;
      if (unheld_only && e.holds > 0) continue;
      if (victim == entries_.end() ||
          std::pair(e.holds == 0, e.first_sample) >
              std::pair(victim->second.holds == 0, victim->second.first_sample)) {
        victim = it;
      }
    }
    if (victim == entries_.end()) return false;
    Entry& v = victim->second;
    reserved_ -= v.info.decoded_bytes;
    counters_->Add(counters_->chunk_evictions, 1);
    if (v.holds == 0) {
      entries_.erase(victim);
      continue;
    }
    v.reserved = false;  // held: loaded again on demand
    v.data.reset();
    v.error = Status::OK();
    v.state = State::kQueued;
  }
  return true;
}

}  // namespace sluice::pipeline

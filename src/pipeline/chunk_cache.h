// ChunkCache: the decoded chunks of one read stage in chunks mode (docs/pipeline.md,
// "Decoded-chunk cache"), shared by its reader threads.
//
// It follows the rank's ChunkPlan: as the read stage pulls samples it admits the plan's next
// needs while their decoded bytes fit its capacity, fetches their bytes with
// RecordSource::FetchChunk (RandomAccessFile::ReadAsync: no thread waits on a remote read;
// adjacent chunks of a shard in one fetch, up to RecordSource::fetch_group_bytes) and
// decodes them on the pipeline's pool, in parallel, before the first record of a chunk is
// asked for. A need is held until the consumer has taken the last sample of its window, so a
// chunk is decoded once per window. A reader that asks for a chunk nobody loads (the plan
// had no room for it yet) loads it itself; one that asks for a chunk being fetched or decoded
// waits for that work, which is running (on an I/O thread or another pipeline thread), never
// queued behind it: the pipeline's "no thread waits for work nobody does".
//
// Memory: reservations (decoded sizes of the chunks admitted or loading) stay within the
// capacity, except that a reader's on-demand load is always admitted (progress), making room
// first by evicting ready chunks: chunks no window holds, then those needed latest. A window
// larger than the capacity therefore costs re-decodes, never memory. Decoded bytes are
// charged to the pipeline's memory budget while any reader or the cache holds them.
//
// With Options::kept (the dataset's KeptChunks, given when all its decoded chunks fit the
// capacity) the cache starts with the chunks kept by the dataset's last iterator, keeps a
// ready chunk after its window ends (evicted first under pressure, as any chunk no window
// holds) and gives its ready chunks back to KeptChunks when it goes.
//
// Threading: Get from any thread; Pulled and Delivered from the stage's puller / consumer.
// Lock order: gate_->mu, then mu_.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "context.h"
#include "kept_chunks.h"
#include "sluice/pipeline/chunk_plan.h"

namespace sluice::pipeline {

class ChunkCache {
 public:
  struct Options {
    uint64_t capacity_bytes = uint64_t{512} << 20;  // decoded bytes admitted at once
    size_t max_fetches = 16;                        // fetches in flight
    size_t max_decodes = 2;                         // decode tasks on the pool
    std::shared_ptr<KeptChunks> kept;               // null: keep nothing past the cache
    // Decoded bytes admitted for needs whose first sample is not pulled yet (at least one
    // such need is); 0: up to the capacity. RecordSource::read_ahead_bytes.
    uint64_t read_ahead_bytes = 0;
  };
  using Handle = std::shared_ptr<const format::DecodedChunk>;

  ChunkCache(PipelineContext* ctx, StageCounters* counters, const RecordSource* source,
             std::shared_ptr<const SnapshotChunks> chunks, ChunkPlan plan, Options options);
  // Stops, cancels the fetches in flight and waits for them and for running decodes; queued
  // decode tasks find the cache gone. With Options::kept, gives it the ready chunks nobody
  // else holds.
  ~ChunkCache();

  // Chunk `chunk` decoded. Errors: the fetch's or the decode's (sticky for the chunk while
  // it is cached), or Cancelled once stopping.
  Result<Handle> Get(uint64_t chunk);
  // The read stage pulled the rank's samples below k: admit and start what comes next.
  void Pulled(uint64_t k);
  // The stage's consumer took the samples below k: needs whose window ended are over.
  void Delivered(uint64_t k);
  // Wakes waiters (they return Cancelled) and stops starting work. Thread-safe.
  void Stop();
  // The stage delivered its last sample (and the destructor, once nothing runs): with
  // Options::kept, gives it the ready chunks no reader holds (the next iterator may start
  // before this one is destroyed).
  void Finish();

 private:
  enum class State { kQueued, kFetching, kFetched, kDecoding, kReady, kFailed };
  struct Entry {
    State state = State::kQueued;
    uint32_t shard = 0;
    format::ShardChunk info;
    bool reserved = false;  // info.decoded_bytes counted in reserved_
    uint32_t holds = 0;     // plan needs not over
    uint32_t waiters = 0;   // readers waiting for it
    bool released = false;  // its last need is over: erased once idle (unless held again)
    uint64_t first_sample = UINT64_MAX;  // earliest need (eviction: latest needed goes first)
    bool kept = false;                   // adopted from Options::kept and not needed yet
    std::string fetched;
    bool fetch_now = false;  // kFetched with nothing fetched yet: the decode fetches first
    std::shared_ptr<ChargedChunk> data;  // kReady
    Status error;
  };
  struct Release {
    uint64_t last_sample;
    uint64_t chunk;
    bool operator>(const Release& o) const { return last_sample > o.last_sample; }
  };
  struct Gate {  // how queued pool tasks find out the cache is gone
    std::mutex mu;
    ChunkCache* cache = nullptr;
  };

  // All *Locked methods run with mu_ held.
  void PumpLocked();
  Entry& EntryLocked(uint64_t chunk);  // creates it (queued, unreserved) when absent
  // Makes room for `bytes` more reserved bytes by evicting ready or queued chunks (never
  // `keep`): first those no window holds (only those when `unheld_only`), then the ones
  // needed latest. True when they fit.
  bool MakeRoomLocked(uint64_t bytes, uint64_t keep, bool unheld_only);
  // Erases a released entry nobody holds, waits for or works on.
  void EraseIfReleasedLocked(uint64_t chunk);
  // Options::kept: the chunks it kept, ready and reserved (none held yet).
  void AdoptKept();
  // A need or a reader uses `e`: counts a kept chunk's first use (StageCounters::chunk_kept).
  void UseLocked(Entry* e);
  // Erases the ready chunks no reader holds, charged to no budget, for KeptChunks (called
  // at the end of the stream or when the cache goes).
  KeptChunks::Chunks TakeReadyLocked();
  // A queued chunk the plan admitted (reserved), so a fetch may start for it.
  bool FetchableLocked(uint64_t chunk) const;
  // One fetch for `group`: queued chunks of one shard, adjacent in it (or a single chunk).
  void StartFetchLocked(const std::vector<uint64_t>& group);
  void OnFetched(const std::vector<uint64_t>& group, Result<std::vector<std::string>> bytes);
  static void RunDecodeTask(const std::shared_ptr<Gate>& gate);
  // Decodes a claimed (kDecoding) entry with mu_ released; returns with it held again.
  void DecodeClaimedLocked(uint64_t chunk, std::unique_lock<std::mutex>* lock);

  PipelineContext* const ctx_;
  StageCounters* const counters_;
  const RecordSource* const source_;
  const std::shared_ptr<const SnapshotChunks> chunks_;
  const Options options_;
  const std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  const std::shared_ptr<io::CancelToken> cancel_ = std::make_shared<io::CancelToken>();

  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  ChunkPlan plan_;
  std::optional<ChunkNeed> next_need_;  // the plan's next need, not admitted yet
  bool plan_done_ = false;
  std::unordered_map<uint64_t, Entry> entries_;
  std::deque<uint64_t> fetch_queue_;   // admitted chunks waiting for a fetch slot
  std::deque<uint64_t> decode_queue_;  // fetched chunks waiting for a decoder
  std::priority_queue<Release, std::vector<Release>, std::greater<Release>> releases_;
  // releases_.top().last_sample, read without the lock by Delivered (UINT64_MAX: none).
  std::atomic<uint64_t> next_release_{UINT64_MAX};
  uint64_t reserved_ = 0;
  // The samples pulled so far, and the needs admitted ahead of them (first sample, decoded
  // bytes; in admission order, which is the plan's: first samples never decrease) with their
  // bytes' sum, for Options::read_ahead_bytes.
  uint64_t pulled_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> ahead_;
  uint64_t ahead_bytes_ = 0;
  size_t fetching_ = 0;      // fetches in flight, a group counting once (callbacks not run)
  size_t decode_tasks_ = 0;  // decode tasks submitted and not finished
  size_t decoding_now_ = 0;  // decodes running (tasks or readers)
  bool stopping_ = false;
};

}  // namespace sluice::pipeline

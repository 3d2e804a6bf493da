// S3 reads: ranged GETs on the HTTP engine. A read longer than the part size becomes parallel
// ranged GETs of part_size each, assembled in order; no thread waits on the network.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <future>
#include <mutex>

#include "io/s3_files.h"
#include "sluice/base/thread_pool.h"

namespace sluice::io {

namespace {

// One read's parts: filled by engine callbacks, delivered once by the last of them.
struct Gather {
  std::mutex mu;
  std::string bytes;                       // guarded by mu
  size_t remaining = 0;                    // guarded by mu
  Status error;                            // guarded by mu: the first failure
  std::vector<HttpEngine::RequestId> ids;  // guarded by mu
  ReadCallback done;
};

class S3ReadFile final : public RandomAccessFile {
 public:
  S3ReadFile(std::shared_ptr<S3Client> client, S3Path path, uint64_t size, std::string etag)
      : client_(std::move(client)),
        path_(std::move(path)),
        uri_(path_.Uri()),
        size_(size),
        etag_(std::move(etag)) {}

  const std::string& path() const override { return uri_; }
  uint64_t size() const override { return size_; }

  // Waits on the engine's delivery directly (no executor hop), so a Read() on an executor
  // thread can never wait for a delivery queued behind itself.
  Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
    std::promise<Result<std::string>> promise;
    auto future = promise.get_future();
    Fetch(offset, n, nullptr, nullptr,
          [&promise](Result<std::string> r) { promise.set_value(std::move(r)); });
    SLUICE_ASSIGN_OR_RETURN(std::string bytes, future.get());
    std::memcpy(scratch, bytes.data(), bytes.size());
    return ByteView(scratch, bytes.size());
  }

  void ReadAsync(uint64_t offset, size_t n, ReadCallback done,
                 const IoContext& context) const override {
    ThreadPool* executor = context.executor != nullptr ? context.executor : IoExecutor();
    Fetch(offset, n, context.cancel, context.buffer,
          [executor, done = std::move(done)](Result<std::string> r) {
            executor->Submit([done, r = std::move(r)]() mutable { done(std::move(r)); });
          });
  }
  void ReadRangesAsync(std::vector<ByteRange> ranges, RangesCallback done,
                       const IoContext& context) const override;

 private:
  // Reads [offset, offset + n) clipped at the end as ranged GETs of part_size each, into
  // `buffer`'s string when given (IoContext::buffer); `deliver` runs once, on the engine
  // thread (or here for an empty range).
  void Fetch(uint64_t offset, size_t n, std::shared_ptr<const CancelToken> cancel,
             std::function<std::string(size_t)> buffer, ReadCallback deliver) const;
  // Checks a 2xx reply for [first, first + length): the object it came from, and a 200 only
  // for the whole object. (The engine already refused a 206 of another range:
  // HttpRequest::expected_range.)
  Status Accept(const HttpResponse& r, uint64_t first, uint64_t length) const;

  std::shared_ptr<S3Client> client_;
  S3Path path_;
  std::string uri_;
  uint64_t size_;
  std::string etag_;
};

Status S3ReadFile::Accept(const HttpResponse& r, uint64_t first, uint64_t length) const {
  const std::string range =
      "bytes " + std::to_string(first) + "-" + std::to_string(first + length - 1);
  const std::string* etag = r.Header("etag");
  if (!etag_.empty() && etag != nullptr && *etag != etag_) {
    return FailedPrecondition(uri_ + ": object changed while open (ETag " + etag_ + ", now " +
                              *etag + ")");
  }
  if (r.status != 206 && !(r.status == 200 && first == 0 && length == size_)) {
    return IoError(uri_ + ": asked for " + range + ", server answered HTTP " +
                   std::to_string(r.status) + " without that range");
  }
  return Status::OK();
}

void S3ReadFile::Fetch(uint64_t offset, size_t n, std::shared_ptr<const CancelToken> cancel,
                       std::function<std::string(size_t)> buffer, ReadCallback done) const {
  auto gather = std::make_shared<Gather>();
  gather->done = std::move(done);
  const uint64_t want = offset >= size_ ? 0 : std::min<uint64_t>(n, size_ - offset);
  auto deliver = [](const std::shared_ptr<Gather>& g) {
    if (g->error.ok()) {
      g->done(std::move(g->bytes));
    } else {
      g->done(g->error);
    }
  };
  if (want == 0 || !client_->ready().ok()) {
    if (want != 0) gather->error = client_->ready().WithContext(uri_);
    deliver(gather);
    return;
  }
  const uint64_t part = std::max<uint64_t>(client_->options().part_size, 1);
  const uint64_t parts = (want + part - 1) / part;
  if (parts > 1) {  // the parts are copied into one string; else the body is the string
    if (buffer) gather->bytes = buffer(want);
    gather->bytes.resize(want);  // a longer buffer shrinks: nothing written
  }
  gather->remaining = parts;
  std::lock_guard<std::mutex> lock(gather->mu);  // ids complete before any callback looks
  for (uint64_t i = 0; i < parts; ++i) {
    const uint64_t first = offset + i * part;
    const uint64_t length = std::min(part, offset + want - first);
    S3Call call;
    call.path = path_;
    call.headers = {
        {"range", "bytes=" + std::to_string(first) + "-" + std::to_string(first + length - 1)}};
    call.expected_body_bytes = length;
    call.expected_range = ByteRange{first, length};
    if (parts == 1) call.body_buffer = buffer;
    call.hedge = true;
    call.cancel = cancel;
    auto on_reply = [this, gather, deliver, first, length, offset, parts,
                     call](Result<HttpResponse> r) {
      Status s = !r.ok()                                  ? r.status()
                 : (r->status == 200 || r->status == 206) ? Accept(*r, first, length)
                                                          : client_->ErrorOf(call, *r);
      std::vector<HttpEngine::RequestId> others;
      bool last = false;
      {
        std::lock_guard<std::mutex> guard(gather->mu);
        if (s.ok() && parts == 1) {
          gather->bytes = std::move(r->body);  // the common case: no copy
        } else if (s.ok()) {
          std::memcpy(gather->bytes.data() + (first - offset), r->body.data(), length);
        } else if (gather->error.ok()) {
          gather->error = s;
          others = gather->ids;  // the other parts are of no use now
        }
        last = --gather->remaining == 0;
      }
      for (auto id : others) client_->engine()->Cancel(id);
      if (last) deliver(gather);
    };
    gather->ids.push_back(client_->Send(call, std::move(on_reply)));
  }
}

// Coalesced: each merged request is one ReadAsync; the asked ranges are cut out of them.
void S3ReadFile::ReadRangesAsync(std::vector<ByteRange> ranges, RangesCallback done,
                                 const IoContext& context) const {
  for (ByteRange& r : ranges) {  // clip at the end of the object
    r.offset = std::min(r.offset, size_);
    r.length = std::min(r.length, size_ - r.offset);
  }
  std::vector<ByteRange> requests = CoalesceRanges(ranges, client_->options().coalesce);
  if (requests.empty()) {
    RandomAccessFile::ReadRangesAsync(std::move(ranges), std::move(done), context);
    return;
  }
  std::vector<ByteRange> request_ranges = requests;
  RandomAccessFile::ReadRangesAsync(
      std::move(request_ranges),
      [ranges = std::move(ranges), requests, buffer = context.buffer,
       done = std::move(done)](Result<std::vector<std::string>> got) {
        if (!got.ok()) return done(got.status());
        constexpr size_t kNone = SIZE_MAX;
        // The request holding each range: the last one starting at or before it.
        std::vector<size_t> request_of(ranges.size(), kNone);
        // Per request, the range that takes its body (moved, then cut to its length; the
        // longest of those starting where the request starts): the others are copied out
        // first. A merged request of one range is then handed on without a copy.
        std::vector<size_t> taker(requests.size(), kNone);
        for (size_t i = 0; i < ranges.size(); ++i) {
          const ByteRange& r = ranges[i];
          auto it =
              std::upper_bound(requests.begin(), requests.end(), r.offset,
                               [](uint64_t off, const ByteRange& q) { return off < q.offset; });
          if (r.length == 0 || it == requests.begin()) continue;
          const size_t index = static_cast<size_t>(it - requests.begin()) - 1;
          request_of[i] = index;
          size_t& t = taker[index];
          if (r.offset == requests[index].offset && (t == kNone || r.length > ranges[t].length)) {
            t = i;
          }
        }
        std::vector<std::string> out(ranges.size());
        for (size_t i = 0; i < ranges.size(); ++i) {
          const size_t index = request_of[i];
          if (index == kNone || taker[index] == i) continue;
          // Into a buffer the caller recycles, when it gives them: a fresh one costs a page
          // fault per 4 KiB (a grouped fetch of four 1 MiB chunks copies three of them).
          if (buffer) out[i] = buffer(ranges[i].length);
          out[i].assign((*got)[index], ranges[i].offset - requests[index].offset, ranges[i].length);
        }
        for (size_t index = 0; index < requests.size(); ++index) {
          if (taker[index] == kNone) continue;
          std::string body = std::move((*got)[index]);
          body.resize(std::min<size_t>(body.size(), ranges[taker[index]].length));
          out[taker[index]] = std::move(body);
        }
        done(std::move(out));
      },
      context);
}

}  // namespace

std::unique_ptr<RandomAccessFile> NewS3ReadFile(std::shared_ptr<S3Client> client, S3Path path,
                                                uint64_t size, std::string etag) {
  return std::make_unique<S3ReadFile>(std::move(client), std::move(path), size, std::move(etag));
}

}  // namespace sluice::io

// A WebHDFS file opened for reading: each read is one or more OPENs with offset and length
// (the NameNode redirects each to a datanode holding the block), many in flight on the HTTP
// engine, hedged when the first byte is late, gathered by GatherRanges.
#include <cstring>
#include <future>

#include "io/ranged_read.h"
#include "io/webhdfs_client.h"

namespace sluice::io {

namespace {

using webhdfs::HdfsUri;

class WebHdfsReadFile final : public RandomAccessFile {
 public:
  WebHdfsReadFile(std::shared_ptr<const WebHdfsFileSystem::Client> client, std::string path,
                  HdfsUri uri, uint64_t size)
      : client_(std::move(client)), path_(std::move(path)), uri_(std::move(uri)), size_(size) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

  Result<ByteView> Read(uint64_t offset, size_t n, char* scratch) const override {
    std::promise<Result<std::string>> promise;
    Fetch(
        offset, n, [&promise](Result<std::string> r) { promise.set_value(std::move(r)); }, {},
        Delivery::kLastPart);
    SLUICE_ASSIGN_OR_RETURN(std::string bytes, promise.get_future().get());
    if (!bytes.empty()) std::memcpy(scratch, bytes.data(), bytes.size());
    return ByteView(scratch, bytes.size());
  }

  void ReadAsync(uint64_t offset, size_t n, ReadCallback done,
                 const IoContext& context) const override {
    Fetch(offset, n, std::move(done), context, Delivery::kExecutor);
  }

 private:
  void Fetch(uint64_t offset, size_t n, ReadCallback done, const IoContext& context,
             Delivery delivery) const {
    // Clipped to the size at open: HDFS refuses an OPEN at or past the end of a file.
    const uint64_t want = offset >= size_ ? 0 : std::min<uint64_t>(n, size_ - offset);
    PartFetcher fetcher;
    fetcher.fetch = [this, cancel = context.cancel](uint64_t first, uint64_t length,
                                                    std::function<void(Result<std::string>)> got) {
      HttpRequest request =
          client_->Request("GET", uri_, "OPEN",
                           {{"offset", std::to_string(first)}, {"length", std::to_string(length)}});
      request.follow_redirects = true;  // to the datanode
      request.expected_body_bytes = length;
      request.hedge = true;
      request.cancel = cancel;
      return client_->engine()->Submit(std::move(request),
                                       [this, got = std::move(got)](Result<HttpResponse> reply) {
                                         Status s = client_->Check(reply, 200, "OPEN", uri_);
                                         if (s.ok()) {
                                           got(std::move(reply->body));
                                         } else {
                                           got(s);
                                         }
                                       });
    };
    HttpEngine* engine = client_->engine();
    fetcher.cancel = [engine](uint64_t id) { engine->Cancel(id); };
    GatherRanges(path_, offset, want, client_->options().read_part_bytes, fetcher, std::move(done),
                 context, delivery);
  }

  std::shared_ptr<const WebHdfsFileSystem::Client> client_;
  std::string path_;
  HdfsUri uri_;
  uint64_t size_;
};

}  // namespace

std::unique_ptr<RandomAccessFile> NewWebHdfsReadFile(
    std::shared_ptr<const WebHdfsFileSystem::Client> client, std::string path, HdfsUri uri,
    uint64_t size) {
  return std::make_unique<WebHdfsReadFile>(std::move(client), std::move(path), std::move(uri),
                                           size);
}

}  // namespace sluice::io

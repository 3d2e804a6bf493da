// S3 writes: one PUT for objects smaller than a part, else a multipart upload whose parts
// are uploaded in parallel while the caller keeps appending. Either way the object becomes
// visible only when Close() succeeds; any failure (and Abort, and destroying an unclosed
// file) aborts the upload, so nothing partial is left under the name.
#include <condition_variable>
#include <map>
#include <mutex>

#include "io/s3_files.h"
#include "io/s3_xml.h"

namespace sluice::io {

namespace {

// S3's smallest part (except the last one).
constexpr uint64_t kMinPartSize = uint64_t{5} << 20;

class S3WriteFile final : public WritableFile {
 public:
  S3WriteFile(std::shared_ptr<S3Client> client, S3Path path)
      : client_(std::move(client)),
        path_(std::move(path)),
        uri_(path_.Uri()),
        base_part_size_(std::max(client_->options().part_size, kMinPartSize)) {}
  ~S3WriteFile() override { Abort(); }

  const std::string& path() const override { return uri_; }
  uint64_t bytes_written() const override { return written_; }

  Status Append(ByteView data) override;
  Status Close() override;
  void Abort() override;

 private:
  // Parts grow by one base size every 1,000 parts: 10,000 parts of 8 MiB would cap objects
  // at 78 GiB; growing, they reach 8 MiB x 1000 x (1 + 2 + ... + 10) = 440 GB.
  uint64_t PartSize(int part_number) const {
    return base_part_size_ * static_cast<uint64_t>(1 + (part_number - 1) / 1000);
  }
  // Records the first error; returns the sticky status.
  const Status& Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
    return status_;
  }
  Status StartUpload();
  Status UploadPart();  // sends buffer_ as the next part
  Status WaitForParts();
  Status Complete();
  void AbortUpload();
  S3Call Call(std::string method) const {
    S3Call c;
    c.method = std::move(method);
    c.path = path_;
    return c;
  }

  std::shared_ptr<S3Client> client_;
  S3Path path_;
  std::string uri_;
  const uint64_t base_part_size_;
  std::string buffer_;  // bytes of the part being filled
  uint64_t written_ = 0;
  Status status_;  // sticky: the first error wins
  bool closed_ = false;
  std::string upload_id_;
  int next_part_ = 1;

  // Part uploads finish on the engine thread.
  std::mutex mu_;
  std::condition_variable cv_;
  size_t parts_in_flight_ = 0;              // guarded by mu_
  std::map<int, std::string> etags_;        // guarded by mu_: part number -> ETag
  Status part_error_;                       // guarded by mu_: the first failed part
  std::vector<HttpEngine::RequestId> ids_;  // guarded by mu_: parts sent
};

Status S3WriteFile::Append(ByteView data) {
  if (!status_.ok()) return status_;
  if (closed_) return FailedPrecondition(uri_ + ": append after Close");
  written_ += data.size();
  while (!data.empty()) {
    const uint64_t room = PartSize(next_part_) - buffer_.size();
    const size_t take = static_cast<size_t>(std::min<uint64_t>(room, data.size()));
    buffer_.append(data.data(), take);
    data.remove_prefix(take);
    if (buffer_.size() == PartSize(next_part_)) {
      Status s = UploadPart();
      if (!s.ok()) return Fail(std::move(s));
    }
  }
  return Status::OK();
}

Status S3WriteFile::StartUpload() {
  SLUICE_RETURN_IF_ERROR(client_->ready().WithContext(uri_));
  S3Call call = Call("POST");
  call.query = {{"uploads", ""}};
  SLUICE_ASSIGN_OR_RETURN(HttpResponse r, client_->Run(call));
  SLUICE_ASSIGN_OR_RETURN(upload_id_, ParseInitiateMultipartUpload(r.body, uri_));
  return Status::OK();
}

Status S3WriteFile::UploadPart() {
  if (upload_id_.empty()) SLUICE_RETURN_IF_ERROR(StartUpload());
  const int number = next_part_++;
  S3Call call = Call("PUT");
  call.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id_}};
  call.body = std::make_shared<const std::string>(std::move(buffer_));
  buffer_ = std::string();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return parts_in_flight_ < client_->options().write_parts_in_flight; });
  if (!part_error_.ok()) return part_error_;
  ++parts_in_flight_;
  // The callback cannot run before the id is recorded: it needs mu_, held here.
  ids_.push_back(client_->Send(call, [this, number, call](Result<HttpResponse> r) {
    Status s = !r.ok()                                 ? r.status()
               : (r->status < 200 || r->status >= 300) ? client_->ErrorOf(call, *r)
                                                       : Status::OK();
    const std::string* etag = r.ok() ? r->Header("etag") : nullptr;
    if (s.ok() && etag == nullptr)
      s = DataLoss(uri_ + ": part " + std::to_string(number) + " reply has no ETag");
    std::lock_guard<std::mutex> guard(mu_);
    if (s.ok()) {
      etags_[number] = *etag;
    } else if (part_error_.ok()) {
      part_error_ = s;
    }
    --parts_in_flight_;
    cv_.notify_all();
  }));
  return Status::OK();
}

Status S3WriteFile::WaitForParts() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return parts_in_flight_ == 0; });
  return part_error_;
}

Status S3WriteFile::Complete() {
  std::vector<std::pair<int, std::string>> parts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    parts.assign(etags_.begin(), etags_.end());
  }
  S3Call call = Call("POST");
  call.query = {{"uploadId", upload_id_}};
  call.body = std::make_shared<const std::string>(CompleteMultipartUploadBody(parts));
  call.ok_body_may_be_error = true;
  SLUICE_ASSIGN_OR_RETURN(HttpResponse r, client_->Run(call));
  if (ParseS3ErrorDocument(r.body).has_value()) return client_->ErrorOf(call, r);
  return Status::OK();
}

Status S3WriteFile::Close() {
  if (closed_) return status_;
  if (status_.ok()) {
    if (upload_id_.empty()) {
      SLUICE_RETURN_IF_ERROR(Fail(client_->ready().WithContext(uri_)));
      S3Call call = Call("PUT");
      call.body = std::make_shared<const std::string>(std::move(buffer_));
      auto r = client_->Run(call);
      if (!r.ok()) (void)Fail(r.status());
    } else {
      Status s = buffer_.empty() ? Status::OK() : UploadPart();
      if (s.ok()) s = WaitForParts();
      if (s.ok()) s = Complete();
      (void)Fail(std::move(s));
    }
  }
  closed_ = true;
  if (!status_.ok()) AbortUpload();
  buffer_ = std::string();
  return status_;
}

void S3WriteFile::Abort() {
  if (closed_) return;
  closed_ = true;
  (void)Fail(Cancelled(uri_ + ": write aborted"));
  AbortUpload();
  buffer_ = std::string();
}

// Stops the parts still uploading, waits for their callbacks, then aborts the upload so S3
// frees the parts (best effort: an upload that cannot be aborted is still never an object).
void S3WriteFile::AbortUpload() {
  std::vector<HttpEngine::RequestId> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ids = ids_;
  }
  for (auto id : ids) client_->engine()->Cancel(id);
  (void)WaitForParts();
  if (upload_id_.empty()) return;
  S3Call call = Call("DELETE");
  call.query = {{"uploadId", upload_id_}};
  (void)client_->Run(call);
  upload_id_.clear();
}

}  // namespace

std::unique_ptr<WritableFile> NewS3WriteFile(std::shared_ptr<S3Client> client, S3Path path) {
  return std::make_unique<S3WriteFile>(std::move(client), std::move(path));
}

}  // namespace sluice::io

// A WebHDFS file being written: bytes go to a temporary name beside the final one, the first
// buffer with CREATE and each later one with APPEND (one upload in flight while the next
// buffer fills); Close renames the temporary into place (rename2 with OVERWRITE), so readers
// never see a partial file under the final name. Abort or a failure deletes the temporary.
//
// APPEND is not idempotent: when its reply is lost, the bytes may or may not have landed. The
// writer then asks for the temporary's length and resends only if the bytes are missing.
#include <future>

#include "io/webhdfs_client.h"

namespace sluice::io {

namespace {

using webhdfs::HdfsUri;
using UploadOp = WebHdfsFileSystem::Client::UploadOp;

constexpr int kAppendChecks = 3;  // resends of an APPEND whose bytes did not land

class WebHdfsWriteFile final : public WritableFile {
 public:
  WebHdfsWriteFile(std::shared_ptr<const WebHdfsFileSystem::Client> client, std::string path,
                   HdfsUri uri)
      : client_(std::move(client)),
        path_(std::move(path)),
        uri_(std::move(uri)),
        tmp_(TemporaryName(uri_)) {}

  ~WebHdfsWriteFile() override { Abort(); }

  const std::string& path() const override { return path_; }
  uint64_t bytes_written() const override { return bytes_written_; }

  Status Append(ByteView data) override {
    if (closed_) return FailedPrecondition(path_ + ": append after close");
    if (!status_.ok()) return status_;
    buffer_.append(data.data(), data.size());
    bytes_written_ += data.size();
    if (buffer_.size() >= client_->options().write_buffer_bytes) status_ = StartUpload();
    return status_;
  }

  Status Close() override {
    if (closed_) return status_;
    closed_ = true;
    if (status_.ok() && (!buffer_.empty() || !started_)) status_ = StartUpload();
    Status waited = WaitForUpload();
    if (status_.ok()) status_ = waited;
    if (status_.ok()) status_ = RenameIntoPlace();
    if (!status_.ok()) DeleteTemporary();
    return status_;
  }

  void Abort() override {
    if (closed_) return;
    closed_ = true;
    (void)WaitForUpload();
    DeleteTemporary();
    if (status_.ok()) status_ = Cancelled(path_ + ": write aborted");
  }

 private:
  // Waits for the upload in flight, then sends the buffer (CREATE first, APPEND after).
  Status StartUpload() {
    SLUICE_RETURN_IF_ERROR(WaitForUpload());
    pending_body_ = std::make_shared<const std::string>(std::move(buffer_));
    buffer_.clear();
    pending_op_ = started_ ? UploadOp::kAppend : UploadOp::kCreate;
    started_ = true;
    auto promise = std::make_shared<std::promise<Status>>();
    pending_ = promise->get_future();
    client_->Upload(pending_op_, tmp_, pending_body_,
                    [promise](Status s) { promise->set_value(std::move(s)); });
    return Status::OK();
  }

  Status WaitForUpload() {
    if (!pending_.valid()) return Status::OK();
    Status s = pending_.get();
    if (!s.ok() && pending_op_ == UploadOp::kAppend && s.code() != StatusCode::kCancelled) {
      s = RecoverAppend(s);
    }
    if (s.ok()) uploaded_ += pending_body_->size();
    pending_body_.reset();
    return s;
  }

  // After a failed APPEND: done if the temporary already holds the bytes, resent if it holds
  // none of them, an error if it holds part of them.
  Status RecoverAppend(Status failure) {
    const uint64_t before = uploaded_, after = uploaded_ + pending_body_->size();
    for (int check = 0; check < kAppendChecks; ++check) {
      auto status = client_->GetFileStatus(tmp_);
      if (!status.ok()) return failure;
      if (status->length == after) return Status::OK();
      if (status->length != before) {
        return IoError(path_ + ": after a failed APPEND (" + failure.message() + ") " +
                       tmp_.ToString() + " holds " + std::to_string(status->length) +
                       " bytes, expected " + std::to_string(before) + " or " +
                       std::to_string(after));
      }
      failure = client_->UploadAndWait(UploadOp::kAppend, tmp_, pending_body_);
      if (failure.ok()) return Status::OK();
    }
    return failure;
  }

  // rename2 with OVERWRITE. A resent rename (by the engine, or by curl on a dead kept-alive
  // connection) whose first try went through finds its source gone: only this writer knows
  // the temporary's name, so that is success when the destination has every byte.
  Status RenameIntoPlace() {
    Status s = client_->Rename(tmp_, uri_, /*overwrite=*/true);
    if (s.code() == StatusCode::kNotFound) {
      auto done = client_->GetFileStatus(uri_);
      if (done.ok() && !done->is_directory && done->length == bytes_written_) return Status::OK();
    }
    return s;
  }

  void DeleteTemporary() {
    if (started_) (void)client_->Delete(tmp_, /*recursive=*/false);
    started_ = false;
  }

  std::shared_ptr<const WebHdfsFileSystem::Client> client_;
  std::string path_;
  HdfsUri uri_, tmp_;
  std::string buffer_;          // bytes not yet sent
  uint64_t bytes_written_ = 0;  // appended by the caller
  uint64_t uploaded_ = 0;       // acknowledged in the temporary
  bool started_ = false;        // the temporary exists (or its CREATE is in flight)
  bool closed_ = false;
  Status status_;                // sticky: the first error
  std::future<Status> pending_;  // the upload in flight
  UploadOp pending_op_ = UploadOp::kCreate;
  std::shared_ptr<const std::string> pending_body_;
};

}  // namespace

std::unique_ptr<WritableFile> NewWebHdfsWriteFile(
    std::shared_ptr<const WebHdfsFileSystem::Client> client, std::string path, HdfsUri uri) {
  return std::make_unique<WebHdfsWriteFile>(std::move(client), std::move(path), std::move(uri));
}

}  // namespace sluice::io

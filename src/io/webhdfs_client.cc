// WebHDFS requests and replies (webhdfs_client.h).
#include "io/webhdfs_client.h"

#include <cstdio>
#include <future>
#include <limits>
#include <random>

#include "io/webhdfs_errors.h"

namespace sluice::io {

using webhdfs::HdfsUri;
using webhdfs::QueryParams;

namespace {

std::shared_ptr<const RetryPolicy> WebHdfsRetryPolicy(RetryPolicy::Options options) {
  for (const std::string& code : webhdfs::RetryableExceptions()) {
    options.retryable_error_codes.push_back(code);
  }
  options.decode_error_code = [](long status, std::string_view body) {
    return webhdfs::ErrorCode(status, body);
  };
  return std::make_shared<const RetryPolicy>(std::move(options));
}

const char* UploadOpName(WebHdfsFileSystem::Client::UploadOp op) {
  return op == WebHdfsFileSystem::Client::UploadOp::kCreate ? "CREATE" : "APPEND";
}

}  // namespace

WebHdfsFileSystem::Client::Client(const WebHdfsOptions& options)
    : options_(options),
      engine_(options.engine != nullptr ? options.engine : DefaultHttpEngine()),
      retry_(WebHdfsRetryPolicy(options.retry)) {}

HttpRequest WebHdfsFileSystem::Client::Request(std::string method, const HdfsUri& uri,
                                               std::string_view op,
                                               const QueryParams& params) const {
  HttpRequest request;
  request.method = std::move(method);
  request.url = webhdfs::RestUrl(uri, op, options_.user, params);
  request.label = std::string(op) + " " + uri.ToString();
  request.retry_policy = retry_;
  request.timeout = options_.request_timeout;
  return request;
}

Status WebHdfsFileSystem::Client::Check(const Result<HttpResponse>& reply, long expected,
                                        std::string_view op, const HdfsUri& uri) const {
  if (!reply.ok()) return reply.status();
  if (reply->status == expected) return Status::OK();
  Status error = webhdfs::ReplyError(op, uri.ToString(), reply->status, reply->body);
  if (reply->attempts <= 1) return error;
  return Status(error.code(),
                error.message() + " (after " + std::to_string(reply->attempts) + " attempts)");
}

Result<HttpResponse> WebHdfsFileSystem::Client::Call(HttpRequest request, std::string_view op,
                                                     const HdfsUri& uri, long expected) const {
  Result<HttpResponse> reply = engine_->Call(std::move(request));
  SLUICE_RETURN_IF_ERROR(Check(reply, expected, op, uri));
  return reply;
}

Result<webhdfs::FileStatus> WebHdfsFileSystem::Client::GetFileStatus(const HdfsUri& uri) const {
  SLUICE_ASSIGN_OR_RETURN(HttpResponse r,
                          Call(Request("GET", uri, "GETFILESTATUS"), "GETFILESTATUS", uri));
  auto status = webhdfs::ParseFileStatus(r.body);
  if (!status.ok()) return status.status().WithContext("GETFILESTATUS " + uri.ToString());
  return status;
}

Result<std::vector<webhdfs::FileStatus>> WebHdfsFileSystem::Client::ListStatus(
    const HdfsUri& uri) const {
  SLUICE_ASSIGN_OR_RETURN(HttpResponse r,
                          Call(Request("GET", uri, "LISTSTATUS"), "LISTSTATUS", uri));
  auto list = webhdfs::ParseFileStatuses(r.body);
  if (!list.ok()) return list.status().WithContext("LISTSTATUS " + uri.ToString());
  return list;
}

Result<bool> WebHdfsFileSystem::Client::Delete(const HdfsUri& uri, bool recursive) const {
  SLUICE_ASSIGN_OR_RETURN(
      HttpResponse r,
      Call(Request("DELETE", uri, "DELETE", {{"recursive", recursive ? "true" : "false"}}),
           "DELETE", uri));
  auto deleted = webhdfs::ParseBoolean(r.body);
  if (!deleted.ok()) return deleted.status().WithContext("DELETE " + uri.ToString());
  return deleted;
}

Status WebHdfsFileSystem::Client::Mkdirs(const HdfsUri& uri) const {
  SLUICE_ASSIGN_OR_RETURN(HttpResponse r, Call(Request("PUT", uri, "MKDIRS"), "MKDIRS", uri));
  auto made = webhdfs::ParseBoolean(r.body);
  if (!made.ok()) return made.status().WithContext("MKDIRS " + uri.ToString());
  if (!*made) return IoError("WebHDFS MKDIRS " + uri.ToString() + ": the NameNode answered false");
  return Status::OK();
}

Status WebHdfsFileSystem::Client::Rename(const HdfsUri& from, const HdfsUri& to,
                                         bool overwrite) const {
  HttpRequest request =
      Request("PUT", from, "RENAME",
              {{"destination", to.path}, {"renameoptions", overwrite ? "OVERWRITE" : "NONE"}});
  return Check(engine_->Call(std::move(request)), 200, "RENAME", from);
}

Result<std::vector<BlockLocation>> WebHdfsFileSystem::Client::BlockLocations(
    const HdfsUri& uri, uint64_t offset, uint64_t length) const {
  QueryParams params = {{"offset", std::to_string(offset)}};
  if (length != std::numeric_limits<uint64_t>::max()) {
    params.push_back({"length", std::to_string(length)});
  }
  if (!legacy_block_locations_.load(std::memory_order_relaxed)) {
    auto r =
        Call(Request("GET", uri, "GETFILEBLOCKLOCATIONS", params), "GETFILEBLOCKLOCATIONS", uri);
    if (r.ok()) {
      auto blocks = webhdfs::ParseBlockLocations(r->body);
      if (!blocks.ok())
        return blocks.status().WithContext("GETFILEBLOCKLOCATIONS " + uri.ToString());
      return blocks;
    }
    // A NameNode without the operation answers 400 IllegalArgumentException naming it
    // ("Invalid value for webhdfs parameter "op": No enum constant ...GETFILEBLOCKLOCATIONS").
    if (r.status().code() != StatusCode::kInvalidArgument ||
        r.status().message().find("Op.GETFILEBLOCKLOCATIONS") == std::string::npos) {
      return r.status();
    }
    legacy_block_locations_.store(true, std::memory_order_relaxed);
  }
  SLUICE_ASSIGN_OR_RETURN(HttpResponse r, Call(Request("GET", uri, "GET_BLOCK_LOCATIONS", params),
                                               "GET_BLOCK_LOCATIONS", uri));
  auto blocks = webhdfs::ParseLocatedBlocks(r.body);
  if (!blocks.ok()) return blocks.status().WithContext("GET_BLOCK_LOCATIONS " + uri.ToString());
  return blocks;
}

void WebHdfsFileSystem::Client::Upload(UploadOp op, const HdfsUri& uri,
                                       std::shared_ptr<const std::string> body,
                                       std::function<void(Status)> done) const {
  const char* name = UploadOpName(op);
  const char* method = op == UploadOp::kCreate ? "PUT" : "POST";
  QueryParams params;
  if (op == UploadOp::kCreate) params = {{"overwrite", "true"}};
  HttpRequest ask = Request(method, uri, name, params);  // step 1: no body, no redirect
  engine_->Submit(std::move(ask), [this, op, uri, name, method, body = std::move(body),
                                   done = std::move(done)](Result<HttpResponse> r) mutable {
    Status s = Check(r, 307, name, uri);
    const std::string* location = s.ok() ? r->Header("location") : nullptr;
    if (s.ok() && (location == nullptr || location->empty())) {
      s = IoError("WebHDFS " + std::string(name) + " " + uri.ToString() +
                  ": the NameNode's 307 reply has no Location");
    }
    if (!s.ok()) {
      done(s);
      return;
    }
    HttpRequest send = Request(method, uri, name);  // step 2: the bytes, to the datanode
    send.url = *location;
    send.body = std::move(body);
    send.retry = op == UploadOp::kCreate;  // CREATE with overwrite is idempotent, APPEND not
    const long expected = op == UploadOp::kCreate ? 201 : 200;
    engine_->Submit(std::move(send),
                    [this, expected, name, uri, done = std::move(done)](Result<HttpResponse> sent) {
                      done(Check(sent, expected, name, uri));
                    });
  });
}

Status WebHdfsFileSystem::Client::UploadAndWait(UploadOp op, const HdfsUri& uri,
                                                std::shared_ptr<const std::string> body) const {
  std::promise<Status> promise;
  Upload(op, uri, std::move(body), [&promise](Status s) { promise.set_value(std::move(s)); });
  return promise.get_future().get();
}

HdfsUri TemporaryName(const HdfsUri& uri) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".tmp-%016llx", static_cast<unsigned long long>(rng()));
  HdfsUri tmp = uri;
  tmp.path += suffix;
  return tmp;
}

}  // namespace sluice::io

// The S3 FileSystem: object operations on S3Client, plus the process-wide instances that
// FileSystemFor("s3://...") hands out (one per AWS configuration).
#include "sluice/io/s3_file_system.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>

#include "io/s3_client.h"
#include "io/s3_files.h"
#include "io/s3_xml.h"

namespace sluice::io {

namespace {

class S3FileSystem final : public FileSystem {
 public:
  explicit S3FileSystem(std::shared_ptr<S3Client> client) : client_(std::move(client)) {}

  std::string_view name() const override { return "s3"; }
  bool merges_ranges() const override { return true; }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> OpenListedForRead(const FileInfo& listed) override;
  bool IsDirectory(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                     const WriteOptions& options) override;
  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::vector<FileInfo>> List(const std::string& dir) override;
  Status Delete(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status CreateDirs(const std::string& dir) override;
  Status PutIfAbsent(const std::string& path, ByteView data) override;

 private:
  // An object's HEAD: nullopt when it does not exist.
  Result<std::optional<HttpResponse>> Head(const S3Path& p);
  // One ListObjectsV2 page under `prefix`.
  Result<S3ListPage> ListPage(const S3Path& bucket, const std::string& prefix,
                              const std::string& token, int max_keys);
  Result<S3Path> ObjectPath(const std::string& uri) {
    SLUICE_ASSIGN_OR_RETURN(S3Path p, ParseS3Path(uri));
    if (p.key.empty() || p.key.back() == '/') {
      return InvalidArgument(uri + ": names a bucket or directory, not an object");
    }
    return p;
  }

  std::shared_ptr<S3Client> client_;
};

Result<std::optional<HttpResponse>> S3FileSystem::Head(const S3Path& p) {
  S3Call call;
  call.method = "HEAD";
  call.path = p;
  auto r = client_->Run(call);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) return std::optional<HttpResponse>();
    return r.status();
  }
  return std::optional<HttpResponse>(std::move(*r));
}

Result<std::unique_ptr<RandomAccessFile>> S3FileSystem::OpenForRead(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ObjectPath(path));
  SLUICE_ASSIGN_OR_RETURN(std::optional<HttpResponse> head, Head(p));
  if (!head.has_value()) return NotFound(path + ": no such object");
  const std::string* length = head->Header("content-length");
  const std::string* etag = head->Header("etag");
  uint64_t size = 0;
  if (length == nullptr ||
      std::from_chars(length->data(), length->data() + length->size(), size).ec != std::errc()) {
    return DataLoss(path + ": HEAD reply has no Content-Length");
  }
  return NewS3ReadFile(client_, std::move(p), size, etag != nullptr ? *etag : "");
}

Result<std::unique_ptr<RandomAccessFile>> S3FileSystem::OpenListedForRead(const FileInfo& listed) {
  if (listed.is_directory || listed.etag.empty()) return OpenForRead(listed.path);
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ObjectPath(listed.path));
  return NewS3ReadFile(client_, std::move(p), listed.size, listed.etag);
}

Result<std::unique_ptr<WritableFile>> S3FileSystem::OpenForWrite(const std::string& path,
                                                                 const WriteOptions&) {
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ObjectPath(path));
  return NewS3WriteFile(client_, std::move(p));
}

Result<S3ListPage> S3FileSystem::ListPage(const S3Path& bucket, const std::string& prefix,
                                          const std::string& token, int max_keys) {
  S3Call call;
  call.path = S3Path{bucket.bucket, ""};
  call.query = {{"list-type", "2"},
                {"prefix", prefix},
                {"delimiter", "/"},
                {"encoding-type", "url"},
                {"max-keys", std::to_string(max_keys)}};
  if (!token.empty()) call.query.emplace_back("continuation-token", token);
  call.label = "s3://" + bucket.bucket + "/" + prefix;
  SLUICE_ASSIGN_OR_RETURN(HttpResponse r, client_->Run(call));
  return ParseListObjectsV2(r.body, "s3://" + bucket.bucket + "/" + prefix);
}

Result<FileInfo> S3FileSystem::Stat(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ParseS3Path(path));
  FileInfo info;
  info.path = path;
  if (p.key.empty()) {  // the bucket
    SLUICE_RETURN_IF_ERROR(CreateDirs(path));
    info.is_directory = true;
    return info;
  }
  std::string key = p.key;
  while (!key.empty() && key.back() == '/') key.pop_back();
  if (key.size() == p.key.size()) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<HttpResponse> head, Head(p));
    if (head.has_value()) {
      const std::string* length = head->Header("content-length");
      if (length != nullptr)
        std::from_chars(length->data(), length->data() + length->size(), info.size);
      const std::string* modified = head->Header("last-modified");
      if (modified != nullptr) info.modification_time_ms = ParseHttpDateMs(*modified);
      return info;
    }
  }
  // No such object: a directory when some key starts with "key/".
  SLUICE_ASSIGN_OR_RETURN(S3ListPage page, ListPage(p, key + "/", "", 1));
  if (page.objects.empty() && page.prefixes.empty())
    return NotFound(path + ": no such object or prefix");
  info.is_directory = true;
  return info;
}

bool S3FileSystem::IsDirectory(const std::string& path) {
  Result<S3Path> p = ParseS3Path(path);
  if (!p.ok()) return false;
  if (p->key.empty()) return Stat(path).ok();  // the bucket
  std::string key = p->key;
  while (!key.empty() && key.back() == '/') key.pop_back();
  Result<S3ListPage> page = ListPage(*p, key + "/", "", 1);
  return page.ok() && (!page->objects.empty() || !page->prefixes.empty());
}

Result<std::vector<FileInfo>> S3FileSystem::List(const std::string& dir) {
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ParseS3Path(dir));
  std::string prefix = p.key;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty()) prefix += '/';
  const std::string base = "s3://" + p.bucket + "/";
  std::vector<FileInfo> out;
  std::string token;
  do {
    SLUICE_ASSIGN_OR_RETURN(S3ListPage page, ListPage(p, prefix, token, 1000));
    for (const S3ObjectEntry& o : page.objects) {
      if (o.key == prefix) continue;  // a "directory marker" object
      out.push_back(FileInfo{base + o.key, o.size, false, o.last_modified_ms, o.etag});
    }
    for (std::string& d : page.prefixes) {
      while (!d.empty() && d.back() == '/') d.pop_back();
      out.push_back(FileInfo{base + d, 0, true});
    }
    token = page.truncated ? page.next_token : "";
  } while (!token.empty());
  std::sort(out.begin(), out.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.path < b.path; });
  return out;
}

Status S3FileSystem::Delete(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ObjectPath(path));
  S3Call call;
  call.method = "DELETE";
  call.path = p;
  return client_->Run(call).status();
}

Status S3FileSystem::Rename(const std::string& from, const std::string& to) {
  SLUICE_ASSIGN_OR_RETURN(S3Path src, ObjectPath(from));
  SLUICE_ASSIGN_OR_RETURN(S3Path dst, ObjectPath(to));
  S3Call copy;
  copy.method = "PUT";
  copy.path = dst;
  copy.headers = {{"x-amz-copy-source", "/" + src.bucket + "/" + UriEncode(src.key, true)}};
  copy.ok_body_may_be_error = true;  // S3 may report a failed copy inside a 200 reply
  auto r = client_->Run(copy);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound)
      return NotFound(from + ": no such object to rename");
    return r.status();
  }
  if (ParseS3ErrorDocument(r->body).has_value()) return client_->ErrorOf(copy, *r);
  return Delete(from);
}

Status S3FileSystem::CreateDirs(const std::string& dir) {
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ParseS3Path(dir));
  // Prefixes need no creating; the bucket must exist, which is worth knowing early.
  S3Call call;
  call.method = "HEAD";
  call.path = S3Path{p.bucket, ""};
  auto r = client_->Run(call);
  if (!r.ok() && r.status().code() == StatusCode::kNotFound) {
    return NotFound("s3://" + p.bucket + ": no such bucket (" + r.status().message() + ")");
  }
  return r.status();
}

Status S3FileSystem::PutIfAbsent(const std::string& path, ByteView data) {
  SLUICE_ASSIGN_OR_RETURN(S3Path p, ObjectPath(path));
  S3Call call;
  call.method = "PUT";
  call.path = p;
  call.headers = {{"if-none-match", "*"}};
  call.body = std::make_shared<const std::string>(data);
  auto r = client_->Run(call);
  if (r.ok() || r.status().code() != StatusCode::kFailedPrecondition) return r.status();
  // 412: an object is there, perhaps this call's own. An attempt whose reply was lost (the
  // server stored the object, the client saw a reset) is sent again, by the engine or by
  // libcurl itself on a dead kept-alive connection (which the attempt count does not show),
  // and the repeat meets what the first one stored. Only the content can tell.
  S3Call get;
  get.path = p;
  auto existing = client_->Run(get);
  if (existing.ok() && existing->body == std::string_view(data.data(), data.size())) {
    return Status::OK();
  }
  if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
    return existing.status().WithContext(path +
                                         " exists (PUT If-None-Match: * answered 412), "
                                         "and reading it back to tell whether it is this "
                                         "call's own object failed");
  }
  return AlreadyExists(path + " exists (PUT If-None-Match: * answered 412)");
}

// The AWS settings that decide which S3 file system a URI gets, as one string.
std::string ConfigKey(const AwsConfig& c) {
  std::string key = c.profile + '\n' + c.region + '\n' + c.endpoint_url + '\n' +
                    std::to_string(static_cast<int>(c.addressing)) + '\n' +
                    (c.anonymous ? "anon" : "signed") + '\n' + std::to_string(c.max_attempts) +
                    '\n';
  if (c.credentials) {
    key += c.credentials->access_key_id + '\n' + c.credentials->secret_access_key + '\n' +
           c.credentials->session_token;
  }
  return key;
}

}  // namespace

Result<std::unique_ptr<FileSystem>> NewS3FileSystem(S3Options options) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<S3Client> client, S3Client::Make(std::move(options)));
  return std::unique_ptr<FileSystem>(new S3FileSystem(std::move(client)));
}

Result<FileSystem*> S3FileSystemFromEnvironment() {
  SLUICE_ASSIGN_OR_RETURN(AwsConfig config, ResolveAwsConfig(ProcessAwsConfigSources()));
  static std::mutex mu;
  static auto* by_config = new std::map<std::string, std::unique_ptr<FileSystem>>;
  const std::string key = ConfigKey(config);
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_config->find(key);
  if (it != by_config->end()) return it->second.get();
  S3Options options;
  options.aws = std::move(config);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileSystem> fs, NewS3FileSystem(std::move(options)));
  FileSystem* raw = fs.get();
  by_config->emplace(key, std::move(fs));
  return raw;
}

}  // namespace sluice::io

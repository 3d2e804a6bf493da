// Path rules of a dataset's stored names (include/sluice/io/relative_path.h).
#include "sluice/io/relative_path.h"

namespace sluice::io {

Status CheckRelativePath(std::string_view path) {
  if (path.empty()) return InvalidArgument("empty path");
  if (path.find('\0') != std::string_view::npos) return InvalidArgument("NUL byte in the path");
  if (path.front() == '/') {
    return InvalidArgument("absolute path: stored paths are relative to the dataset directory");
  }
  if (path.find("://") != std::string_view::npos) {
    return InvalidArgument("a URI: stored paths are relative to the dataset directory");
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view component = path.substr(start, slash - start);
    if (component == "..") return InvalidArgument("a '..' component leaves the dataset directory");
    if (component.empty() || component == ".") {
      return InvalidArgument("an empty or '.' component (write the plain relative path)");
    }
    start = slash + 1;
  }
  return Status::OK();
}

Status CheckInsideRoot(FileSystem* fs, const std::string& root, std::string_view path) {
  SLUICE_RETURN_IF_ERROR(CheckRelativePath(path));
  std::string joined = JoinPath(root, path);
  Result<std::string> real = fs->RealPath(joined);
  if (!real.ok()) {
    if (real.status().code() == StatusCode::kNotFound) return Status::OK();
    return real.status();
  }
  SLUICE_ASSIGN_OR_RETURN(std::string real_root, fs->RealPath(root));
  if (real_root.empty() || real_root.back() != '/') real_root += '/';
  if (real->compare(0, real_root.size(), real_root) != 0) {
    return InvalidArgument("resolves to " + *real + ", outside the dataset directory " + real_root +
                           " (a symbolic link pointing out)");
  }
  return Status::OK();
}

}  // namespace sluice::io

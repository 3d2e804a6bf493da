// Data file paths: how a relative path is spelled in the log (a URI path, PROTOCOL.md "Add
// File"), Spark's partition directory names, and the rule that a table only reads files
// under its root (issue 13's path-traversal rule, applied to logs).
#include <cctype>
#include <cstdio>

#include "io/url.h"
#include "sluice/table/table.h"

namespace sluice::table {
namespace {

// Spark's ExternalCatalogUtils.escapePathName set: characters a partition value cannot
// hold in a directory name.
bool NeedsHiveEscape(unsigned char c) {
  static const std::string_view special = "\"#%'*/:=?\\{[]^";
  return c < 0x20 || c == 0x7F || special.find(static_cast<char>(c)) != std::string_view::npos;
}

std::string HiveEscape(std::string_view value) {
  return io::PercentEncode(value, [](unsigned char c) { return !NeedsHiveEscape(c); });
}

bool UriSafe(unsigned char c) {
  return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/' || c == '=';
}

}  // namespace

std::string PartitionDirectory(const PartitionValues& values,
                               const std::vector<std::string>& columns) {
  std::string out;
  for (const std::string& column : columns) {
    auto it = values.find(column);
    std::string value = it == values.end() || !it->second.has_value() ? "__HIVE_DEFAULT_PARTITION__"
                                                                      : HiveEscape(*it->second);
    if (!out.empty()) out += '/';
    out += HiveEscape(column) + "=" + value;
  }
  return out;
}

std::string EncodeLogPath(std::string_view relative_path) {
  return io::PercentEncode(relative_path, UriSafe);
}

Result<std::string> DecodeLogPath(std::string_view spelled) {
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("data file path '" + std::string(spelled) + "' " + why +
                           ": sluice reads only files under the table root");
  };
  size_t colon = spelled.find(':');
  size_t slash = spelled.find('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash)) {
    return refuse("is an absolute URI");
  }
  Result<std::string> decoded = io::UriDecode(spelled);
  if (!decoded.ok()) return refuse("has a bad %-escape");
  std::string out = std::move(*decoded);
  if (out.empty() || out[0] == '/') return refuse("is absolute");
  size_t start = 0;
  while (start <= out.size()) {
    size_t end = out.find('/', start);
    if (end == std::string::npos) end = out.size();
    std::string_view part(out.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return refuse("has an empty, . or .. part");
    if (part.find('\0') != std::string_view::npos) return refuse("holds a NUL byte");
    start = end + 1;
  }
  return out;
}

}  // namespace sluice::table

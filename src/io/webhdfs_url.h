// hdfs:// and webhdfs:// URIs, and the REST URLs they map to (hadoop-hdfs WebHDFS.md,
// "FileSystem URIs vs HTTP URLs"): webhdfs://HOST:PORT/PATH is
// http://HOST:PORT/webhdfs/v1/PATH?op=... Pure functions, no I/O.
//
// sluice reaches HDFS only through WebHDFS, so in `hdfs://HOST:PORT/PATH` the port is the
// NameNode's HTTP port (dfs.namenode.http-address, 9870 by default since Hadoop 3; 50070 in
// Hadoop 2), not its RPC port (8020) as in Hadoop's own hdfs:// URIs. docs/hdfs.md says so.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::io::webhdfs {

inline constexpr int kDefaultHttpPort = 9870;

struct HdfsUri {
  std::string scheme;  // "hdfs" or "webhdfs"
  std::string host;    // as written ("[::1]" keeps its brackets)
  int port = kDefaultHttpPort;
  std::string path;  // absolute and normalised: "/a/b", "/" for the root

  // "hdfs://host:port" (the part that names the NameNode)
  std::string Authority() const;
  // scheme://host:port/path: how a path is named in errors and listings.
  std::string ToString() const;
};

// Parses "hdfs://host[:port][/path]" (also webhdfs://). Repeated and trailing slashes are
// dropped; "." and ".." components, user info, a missing host or a bad port are
// InvalidArgument naming the URI.
Result<HdfsUri> ParseHdfsUri(std::string_view uri);

// Percent-encodes all but RFC 3986's unreserved characters (and '/' when `keep_slash`).
std::string PercentEncode(std::string_view text, bool keep_slash);

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// The REST URL of `op` on `uri`'s path: http://host:port/webhdfs/v1/PATH?op=OP[&user.name=U]
// followed by `params` in order (values percent-encoded).
std::string RestUrl(const HdfsUri& uri, std::string_view op, std::string_view user,
                    const QueryParams& params = {});

}  // namespace sluice::io::webhdfs

// The path rules for names a dataset stores about its own files: the shard and index paths
// of dataset.json today, the file names of a table's log and the keys under an object-store
// prefix later. A stored name is relative to the dataset's root and never leaves it, so a
// manifest cannot make a reader open "../../etc/passwd" or another dataset's shards
// (docs/manifest.md, "Path rules").
#pragma once

#include <string>
#include <string_view>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::io {

// The lexical rule: '/'-separated components, none of them empty, "." or ".."; not absolute;
// no URI scheme ("s3://..."); no NUL byte. InvalidArgument saying which rule `path` breaks
// (the caller adds where the path came from).
Status CheckRelativePath(std::string_view path);

// The lexical rule, then, on file systems with links (FileSystem::RealPath), that
// `root/path` resolved stays inside `root` resolved: a symbolic link pointing out of the
// dataset is refused like "..". A path that does not exist passes (opening it reports it).
Status CheckInsideRoot(FileSystem* fs, const std::string& root, std::string_view path);

}  // namespace sluice::io

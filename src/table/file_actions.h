// Conversions between the public DataFile and the log's add/remove actions.
#pragma once

#include "sluice/table/actions.h"
#include "sluice/table/table.h"

namespace sluice::table {

inline constexpr std::string_view kIndexTag = "sluice.index";

// An add for a new file (dataChange = true); modification time `now_ms` when the file has none.
AddFile ToAdd(const DataFile& file, int64_t now_ms);
DataFile ToDataFile(const AddFile& add);
// The remove of a live file, carrying its partition values and size (extendedFileMetadata).
RemoveFile ToRemove(const AddFile& add, bool data_change);

}  // namespace sluice::table

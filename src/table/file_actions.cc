#include "file_actions.h"

namespace sluice::table {

AddFile ToAdd(const DataFile& file, int64_t now_ms) {
  AddFile a;
  a.path = file.path;
  a.partition_values = file.partition_values;
  a.size = file.size;
  a.modification_time = file.modification_time_ms > 0 ? file.modification_time_ms : now_ms;
  a.data_change = true;
  if (file.records >= 0) a.stats = RecordCountStats(file.records);
  a.tags = file.tags;
  return a;
}

DataFile ToDataFile(const AddFile& add) {
  DataFile f;
  f.path = add.path;
  f.size = add.size;
  f.records = add.num_records().value_or(-1);
  f.partition_values = add.partition_values;
  f.tags = add.tags;
  f.modification_time_ms = add.modification_time;
  return f;
}

RemoveFile ToRemove(const AddFile& add, bool data_change) {
  RemoveFile r;
  r.path = add.path;
  r.data_change = data_change;
  r.extended_file_metadata = true;
  r.partition_values = add.partition_values;
  r.size = add.size;
  r.tags = add.tags;
  return r;
}

}  // namespace sluice::table

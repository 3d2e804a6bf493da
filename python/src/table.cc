// sluice._sluice._Table and _TableWriter: the C++ table (include/sluice/table/) for the
// Python class sluice.Table (python/sluice/table.py), which adds the delta-rs-style names,
// timestamp parsing and dict results. The GIL is released around every storage access.
#include "table.h"

#include <pybind11/stl.h>

#include "errors.h"
#include "sluice/table/table.h"
#include "sluice/table/table_writer.h"
#include "sluice/table/timestamp.h"

namespace sluice::python {
namespace {

namespace py = pybind11;
using table::DataFile;
using table::Table;

// Runs `f` without the GIL and returns its value or raises.
template <typename F>
auto Unlocked(F&& f) {
  decltype(f()) r = Cancelled("not run");
  {
    py::gil_scoped_release release;
    r = f();
  }
  return ValueOrThrow(std::move(r));
}

py::object Optional(const std::optional<std::string>& v) {
  return v ? py::object(py::str(*v)) : py::object(py::none());
}

py::dict Partitions(const table::PartitionValues& values) {
  py::dict out;
  for (const auto& [k, v] : values) out[py::str(k)] = Optional(v);
  return out;
}

table::PartitionValues PartitionsFrom(const std::optional<std::map<std::string, py::object>>& in) {
  table::PartitionValues out;
  if (!in) return out;
  for (const auto& [k, v] : *in) {
    if (v.is_none()) {
      out[k] = std::nullopt;
    } else {
      out[k] = py::str(v).cast<std::string>();
    }
  }
  return out;
}

py::dict FileDict(const DataFile& f) {
  py::dict d;
  d["path"] = f.path;
  d["size"] = f.size;
  d["records"] = f.records >= 0 ? py::object(py::int_(f.records)) : py::object(py::none());
  d["partition_values"] = Partitions(f.partition_values);
  d["modification_time"] = f.modification_time_ms;
  d["tags"] = f.tags;
  return d;
}

// A DataFile as a tuple and back: written on a worker, committed by the client (sluice.dask).
py::tuple DataFileState(const DataFile& f) {
  return py::make_tuple(f.path, f.size, f.records, Partitions(f.partition_values), f.tags,
                        f.modification_time_ms);
}

DataFile DataFileFromState(const py::tuple& t) {
  if (t.size() != 6) ThrowStatus(InvalidArgument("a _DataFile state is a tuple of 6"));
  DataFile f;
  f.path = t[0].cast<std::string>();
  f.size = t[1].cast<int64_t>();
  f.records = t[2].cast<int64_t>();
  f.partition_values = PartitionsFrom(t[3].cast<std::map<std::string, py::object>>());
  f.tags = t[4].cast<std::map<std::string, std::string>>();
  f.modification_time_ms = t[5].cast<int64_t>();
  return f;
}

py::dict CommitDict(const table::CommitResult& r) {
  py::dict d;
  d["version"] = r.version;
  d["attempts"] = r.attempts;
  d["duplicate"] = r.duplicate;
  d["checkpoint_version"] =
      r.checkpoint_version ? py::object(py::int_(*r.checkpoint_version)) : py::object(py::none());
  if (!r.checkpoint_error.empty()) d["checkpoint_error"] = r.checkpoint_error;
  return d;
}

table::CommitOptions Commit(
    const std::optional<std::pair<std::string, int64_t>>& txn,
    const std::vector<std::string>& partition_by,
    const std::map<std::string, std::pair<std::string, int64_t>>& features) {
  table::CommitOptions o;
  if (txn) o.txn = table::TxnId{txn->first, txn->second};
  o.create.partition_columns = partition_by;
  for (const auto& [name, spec] : features) {
    format::FeatureSchema f;
    bool known = false;
    for (auto t :
         {format::FeatureType::kBytes, format::FeatureType::kFloat, format::FeatureType::kInt64}) {
      if (format::FeatureTypeName(t) == spec.first) {
        f.type = t;
        known = true;
      }
    }
    if (!known) {
      ThrowStatus(InvalidArgument("feature '" + name + "': unknown type '" + spec.first +
                                  "' (expected bytes, float or int64)"));
    }
    f.values_per_record = spec.second;
    o.create.features[name] = f;
  }
  return o;
}

table::FilePredicate Predicate(const std::optional<std::string>& text) {
  if (!text) return {};
  return ValueOrThrow(table::FilePredicate::Parse(*text));
}

// The Python-facing handle: a Table that writes move to the version they commit.
class PyTable {
 public:
  explicit PyTable(Table t) : t_(std::move(t)) {}

  static PyTable Open(const std::string& path, std::optional<int64_t> version,
                      std::optional<int64_t> timestamp_ms) {
    table::OpenOptions o;
    o.version = version;
    o.timestamp_ms = timestamp_ms;
    return PyTable(Unlocked([&] { return Table::Open(path, o); }));
  }

  static PyTable Create(const std::string& path, const std::vector<std::string>& partition_by,
                        const std::map<std::string, std::pair<std::string, int64_t>>& features,
                        std::optional<std::string> name, std::optional<std::string> description,
                        const std::map<std::string, std::string>& configuration) {
    table::CommitOptions o = Commit(std::nullopt, partition_by, features);
    o.create.name = std::move(name);
    o.create.description = std::move(description);
    o.create.configuration = configuration;
    std::string local;
    io::FileSystem* fs = ValueOrThrow(io::FileSystemFor(path, &local));
    return PyTable(Unlocked([&] { return Table::Create(fs, local, o); }));
  }

  int64_t version() const { return t_.version(); }
  int64_t timestamp_ms() const { return t_.timestamp_ms(); }
  const std::string& root() const { return t_.root(); }
  int64_t num_records() const { return t_.num_records(); }
  std::optional<int64_t> txn_version(const std::string& app_id) const {
    return t_.txn_version(app_id);
  }

  std::vector<std::string> Files() const {
    std::vector<std::string> out;
    for (const DataFile& f : t_.files()) out.push_back(f.path);
    return out;
  }
  py::list FileDetails() const {
    py::list out;
    for (const DataFile& f : t_.files()) out.append(FileDict(f));
    return out;
  }
  py::dict Protocol() const {
    const table::Protocol& p = t_.protocol();
    py::dict d;
    d["min_reader_version"] = p.min_reader_version;
    d["min_writer_version"] = p.min_writer_version;
    d["reader_features"] = p.reader_features;
    d["writer_features"] = p.writer_features;
    return d;
  }
  py::dict Metadata() const {
    const table::Metadata& m = t_.metadata();
    py::dict d;
    d["id"] = m.id;
    d["name"] = Optional(m.name);
    d["description"] = Optional(m.description);
    d["format"] = m.format_provider;
    d["partition_columns"] = m.partition_columns;
    d["configuration"] = m.configuration;
    d["schema_string"] = m.schema_string;
    d["created_time"] = m.created_time ? py::object(py::int_(*m.created_time)) : py::none();
    return d;
  }
  py::dict Features() const {
    py::dict d;
    for (const auto& [name, f] : t_.features()) {
      d[py::str(name)] =
          py::make_tuple(std::string(format::FeatureTypeName(f.type)), f.values_per_record);
    }
    return d;
  }
  py::list History(std::optional<size_t> limit) const {
    auto history = Unlocked([&] { return t_.History(limit); });
    py::list out;
    for (const table::HistoryEntry& e : history) {
      py::dict d;
      d["version"] = e.version;
      d["timestamp"] = e.timestamp_ms;
      d["operation"] = e.operation;
      d["operationParameters"] = e.operation_parameters;
      d["operationMetrics"] = e.operation_metrics;
      d["commitInfo"] = e.commit_info_json;
      out.append(d);
    }
    return out;
  }

  py::dict Append(const std::vector<std::string>& paths,
                  const std::optional<std::map<std::string, py::object>>& partition,
                  const std::optional<std::pair<std::string, int64_t>>& txn) {
    table::PartitionValues values = PartitionsFrom(partition);
    table::CommitOptions o = Commit(txn, {}, {});
    return CommitDict(Unlocked([&]() -> Result<table::CommitResult> {
      std::vector<DataFile> files;
      for (const std::string& p : paths) {
        SLUICE_ASSIGN_OR_RETURN(DataFile f, table::DescribeShard(t_.fs(), t_.root(), p, values));
        files.push_back(std::move(f));
      }
      return t_.AppendFiles(std::move(files), o);
    }));
  }
  py::dict Delete(const std::optional<std::string>& predicate) {
    table::FilePredicate where = Predicate(predicate);
    return CommitDict(Unlocked([&] { return t_.Delete(where); }));
  }
  py::dict Restore(int64_t version) {
    return CommitDict(Unlocked([&] { return t_.Restore(version); }));
  }
  py::dict Optimize(uint64_t target_size, const std::optional<std::string>& predicate) {
    table::OptimizeOptions o;
    o.target_file_bytes = target_size;
    o.where = Predicate(predicate);
    table::OptimizeResult r = Unlocked([&] { return t_.Optimize(o); });
    py::dict d = CommitDict(r.commit);
    d["numFilesRemoved"] = r.removed.size();
    d["numFilesAdded"] = r.added.size();
    d["filesRemoved"] = r.removed;
    d["filesAdded"] = r.added;
    d["numRecords"] = r.records;
    return d;
  }
  std::vector<std::string> Vacuum(std::optional<double> retention_hours, bool dry_run,
                                  bool enforce) {
    table::VacuumOptions o;
    o.retention_hours = retention_hours;
    o.dry_run = dry_run;
    o.enforce_retention_duration = enforce;
    return Unlocked([&] { return t_.Vacuum(o); }).files;
  }
  int64_t Checkpoint() {
    return Unlocked([&] { return t_.Checkpoint(); });
  }
  void Update() {
    Status s;
    {
      py::gil_scoped_release release;
      s = t_.Refresh();
    }
    ThrowIfError(s);
  }
  // Commits files written by a _TableWriter.
  py::dict CommitWritten(std::vector<DataFile> files, const std::string& mode,
                         const std::optional<std::string>& predicate,
                         const std::optional<std::pair<std::string, int64_t>>& txn) {
    table::CommitOptions o = Commit(txn, {}, {});
    if (mode == "append") {
      return CommitDict(Unlocked([&] { return t_.AppendFiles(std::move(files), o); }));
    }
    if (mode != "overwrite") ThrowStatus(InvalidArgument("mode must be 'append' or 'overwrite'"));
    table::FilePredicate where = Predicate(predicate);
    return CommitDict(Unlocked([&] { return t_.Overwrite(std::move(files), where, o); }));
  }

 private:
  Table t_;
};

// Shards written into a table's directory, committed by PyTable::CommitWritten. Files of a
// writer dropped before its commit are deleted.
class PyTableWriter {
 public:
  PyTableWriter(const std::string& root,
                const std::optional<std::map<std::string, py::object>>& partition,
                const std::string& codec, uint64_t target_file_bytes, const std::string& prefix) {
    table::TableWriterOptions o;
    o.prefix = prefix;
    o.record.codec = ValueOrThrow(format::ParseCodec(codec));
    o.target_file_bytes = target_file_bytes;
    o.partition_values = PartitionsFrom(partition);
    std::string local;
    io::FileSystem* fs = ValueOrThrow(io::FileSystemFor(root, &local));
    writer_ = ValueOrThrow(table::TableWriter::Open(fs, local, o));
  }
  void Write(py::bytes record) {
    std::string_view view = record;
    Status s;
    {
      py::gil_scoped_release release;
      s = Live().Write(view);
    }
    ThrowIfError(s);
  }
  std::vector<DataFile> Finish() {
    return Unlocked([&] { return Live().Finish(); });
  }
  void Abort() {
    if (writer_) writer_->Abort();
  }
  uint64_t records_written() const { return writer_ ? writer_->records_written() : 0; }

 private:
  table::TableWriter& Live() {
    if (!writer_) ThrowStatus(FailedPrecondition("the table writer is closed"));
    return *writer_;
  }
  std::unique_ptr<table::TableWriter> writer_;
};

// Commits files a _TableWriter wrote under PATH: creates the table (holding them, version 0;
// with the name, description and configuration given) when absent, else appends or
// overwrites (the files matching `predicate`).
py::dict CommitFiles(const std::string& path, std::vector<DataFile> files, const std::string& mode,
                     const std::optional<std::string>& predicate,
                     const std::vector<std::string>& partition_by,
                     const std::map<std::string, std::pair<std::string, int64_t>>& features,
                     const std::optional<std::pair<std::string, int64_t>>& txn,
                     std::optional<std::string> name, std::optional<std::string> description,
                     const std::map<std::string, std::string>& configuration) {
  if (mode != "append" && mode != "overwrite") {
    ThrowStatus(InvalidArgument("mode must be 'append' or 'overwrite', not '" + mode + "'"));
  }
  table::CommitOptions o = Commit(txn, partition_by, features);
  o.create.name = std::move(name);
  o.create.description = std::move(description);
  o.create.configuration = configuration;
  table::FilePredicate where = Predicate(predicate);
  std::string local;
  io::FileSystem* fs = ValueOrThrow(io::FileSystemFor(path, &local));
  return CommitDict(Unlocked([&]() -> Result<table::CommitResult> {
    if (mode == "overwrite" && Table::IsTable(fs, local)) {
      SLUICE_ASSIGN_OR_RETURN(Table t, Table::Open(fs, local));
      return t.Overwrite(std::move(files), where, o);
    }
    return Table::Append(fs, local, std::move(files), o);
  }));
}

// (root, version) of the table PATH names at the version/timestamp asked, or None.
py::object ResolveTable(const std::string& path, std::optional<int64_t> version,
                        std::optional<int64_t> timestamp_ms) {
  std::string local;
  io::FileSystem* fs = ValueOrThrow(io::FileSystemFor(path, &local));
  table::OpenOptions o;
  o.version = version;
  o.timestamp_ms = timestamp_ms;
  auto selection = Unlocked([&] { return table::ResolveTableRead(fs, local, o); });
  if (!selection) return py::none();
  return py::make_tuple(selection->root, selection->version);
}

}  // namespace

void RegisterTable(py::module_& m) {
  using py::arg;
  py::class_<DataFile>(m, "_DataFile")
      .def_readonly("path", &DataFile::path)
      .def_readonly("size", &DataFile::size)
      .def_readonly("records", &DataFile::records)
      .def_property_readonly("partition_values",
                             [](const DataFile& f) { return Partitions(f.partition_values); })
      .def(py::pickle(&DataFileState, &DataFileFromState));
  py::class_<PyTable>(m, "_Table")
      .def_static("open", &PyTable::Open, arg("path"), arg("version") = py::none(),
                  arg("timestamp_ms") = py::none())
      .def_static("create", &PyTable::Create, arg("path"), arg("partition_by"), arg("features"),
                  arg("name"), arg("description"), arg("configuration"))
      .def("version", &PyTable::version)
      .def("timestamp_ms", &PyTable::timestamp_ms)
      .def("root", &PyTable::root)
      .def("num_records", &PyTable::num_records)
      .def("txn_version", &PyTable::txn_version, arg("app_id"))
      .def("files", &PyTable::Files)
      .def("file_details", &PyTable::FileDetails)
      .def("protocol", &PyTable::Protocol)
      .def("metadata", &PyTable::Metadata)
      .def("features", &PyTable::Features)
      .def("history", &PyTable::History, arg("limit") = py::none())
      .def("append", &PyTable::Append, arg("paths"), arg("partition") = py::none(),
           arg("txn") = py::none())
      .def("delete", &PyTable::Delete, arg("predicate") = py::none())
      .def("restore", &PyTable::Restore, arg("version"))
      .def("optimize", &PyTable::Optimize, arg("target_size"), arg("predicate") = py::none())
      .def("vacuum", &PyTable::Vacuum, arg("retention_hours"), arg("dry_run"),
           arg("enforce_retention_duration"))
      .def("checkpoint", &PyTable::Checkpoint)
      .def("update", &PyTable::Update)
      .def("commit_written", &PyTable::CommitWritten, arg("files"), arg("mode"),
           arg("predicate") = py::none(), arg("txn") = py::none());
  py::class_<PyTableWriter>(m, "_TableWriter")
      .def(py::init<const std::string&, const std::optional<std::map<std::string, py::object>>&,
                    const std::string&, uint64_t, const std::string&>(),
           arg("root"), arg("partition"), arg("codec"), arg("target_file_bytes"),
           arg("prefix") = "part")
      .def("write", &PyTableWriter::Write, arg("record"))
      .def("finish", &PyTableWriter::Finish)
      .def("abort", &PyTableWriter::Abort)
      .def_property_readonly("records_written", &PyTableWriter::records_written);
  m.def("_resolve_table", &ResolveTable, arg("path"), arg("version") = py::none(),
        arg("timestamp_ms") = py::none());
  m.def("_commit_files", &CommitFiles, arg("path"), arg("files"), arg("mode"), arg("predicate"),
        arg("partition_by"), arg("features"), arg("txn"), arg("name") = py::none(),
        arg("description") = py::none(),
        arg("configuration") = std::map<std::string, std::string>{});
  m.def("_parse_timestamp",
        [](const std::string& text) { return ValueOrThrow(table::ParseTimestamp(text)); });
  m.def("_format_timestamp", [](int64_t ms) { return table::FormatTimestamp(ms); });
}

}  // namespace sluice::python

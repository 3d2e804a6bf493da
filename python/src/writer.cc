#include "writer.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "errors.h"
#include "sluice/format/example.h"
#include "sluice/format/record_writer.h"
#include "sluice/format/shard_writer.h"

namespace sluice::python {
namespace {

namespace py = pybind11;

bool IsBytesLike(py::handle v) {
  return py::isinstance<py::bytes>(v) || py::isinstance<py::str>(v) || PyByteArray_Check(v.ptr());
}

std::string BytesOf(py::handle v) {
  if (PyByteArray_Check(v.ptr())) return py::bytes(py::reinterpret_borrow<py::object>(v));
  return v.cast<std::string>();
}

// What AddFeature encoded: the type as a table's schema names it ("bytes", "int64", "float"),
// or none for an empty list that is not an ndarray (its type is not known), and the count.
struct FeatureSpec {
  const char* type = nullptr;
  size_t count = 0;
};

// One feature: bytes/str -> bytes_list; bool/int -> int64_list; float -> float_list; a
// sequence or ndarray of those -> a list of that kind (ndarray kinds: i/u/b -> int64, f ->
// float, S/O -> bytes).
FeatureSpec AddFeature(format::ExampleBuilder* b, const std::string& name, py::handle value) {
  if (IsBytesLike(value)) {
    b->AddBytes(name, BytesOf(value));
    return {"bytes", 1};
  }
  py::array a = py::array::ensure(value);
  if (!a) {
    throw py::type_error("make_example: feature '" + name + "' has an unsupported value " +
                         py::repr(value).cast<std::string>());
  }
  char kind = a.dtype().kind();
  py::array flat = a.attr("reshape")(-1);
  FeatureSpec spec{nullptr, static_cast<size_t>(a.size())};
  if (kind == 'i' || kind == 'u' || kind == 'b') {
    b->AddInt64s(name, flat.attr("astype")("int64").attr("tolist")().cast<std::vector<int64_t>>());
    spec.type = "int64";
  } else if (kind == 'f') {
    b->AddFloats(name, flat.attr("astype")("float32").attr("tolist")().cast<std::vector<float>>());
    spec.type = "float";
  } else if (kind == 'S' || kind == 'O' || kind == 'U') {
    std::vector<std::string> values;
    for (py::handle v : flat) {
      if (!IsBytesLike(v)) {
        throw py::type_error("make_example: feature '" + name + "' has an unsupported value " +
                             py::repr(v).cast<std::string>());
      }
      values.push_back(BytesOf(v));
    }
    b->AddBytes(name, std::move(values));
    spec.type = "bytes";
  } else {
    throw py::type_error("make_example: feature '" + name + "' has dtype " +
                         py::str(a.dtype()).cast<std::string>());
  }
  if (spec.count == 0 && !py::isinstance<py::array>(value)) spec.type = nullptr;  // []
  return spec;
}

py::bytes MakeExample(const py::dict& features) {
  format::ExampleBuilder b;
  for (auto [key, value] : features) AddFeature(&b, py::str(key).cast<std::string>(), value);
  return py::bytes(b.Serialize());
}

// make_example, plus what it encoded: ({name: type or None}, {name: count}), two dicts so that
// records of one schema compare equal by their types alone (sluice.dask checks the records'
// schema with them, python/sluice/features.py).
py::tuple MakeExampleAndSchema(const py::dict& features) {
  format::ExampleBuilder b;
  py::dict types;
  py::dict counts;
  for (auto [key, value] : features) {
    std::string name = py::str(key).cast<std::string>();
    FeatureSpec spec = AddFeature(&b, name, value);
    py::str k(name);
    types[k] = spec.type ? py::object(py::str(spec.type)) : py::object(py::none());
    counts[k] = spec.count;
  }
  return py::make_tuple(py::bytes(b.Serialize()), types, counts);
}

// One shard file (+ its index) through format::RecordWriter. Sticky failure; the file
// appears under its name only when close() succeeds (a writer dropped unclosed leaves none).
class PyRecordWriter {
 public:
  PyRecordWriter(const std::string& path, const std::string& codec, int zstd_level,
                 size_t zstd_frame_bytes, bool write_index) {
    format::RecordWriterOptions o;
    o.codec = ValueOrThrow(format::ParseCodec(codec));
    o.zstd_level = zstd_level;
    o.zstd_frame_bytes = zstd_frame_bytes;
    o.write_index = write_index;
    std::string local;
    io::FileSystem* fs = ValueOrThrow(io::FileSystemFor(path, &local));
    writer_ = ValueOrThrow(format::RecordWriter::Open(fs, local, o));
  }

  void Write(py::bytes record) {
    std::string_view view = record;         // `record` keeps the bytes alive while unlocked
    format::RecordWriter& writer = Live();  // may raise: only with the GIL
    Status s;
    {
      py::gil_scoped_release release;
      s = writer.Write(ByteView(view));
    }
    ThrowIfError(s);
  }

  void Close() {
    if (!writer_) return;
    std::unique_ptr<format::RecordWriter> w = std::move(writer_);
    Status s;
    {
      py::gil_scoped_release release;
      s = w->Close();
    }
    ThrowIfError(s);
  }

  uint64_t records_written() { return Live().records_written(); }

 private:
  format::RecordWriter& Live() {
    if (!writer_) ThrowStatus(FailedPrecondition("the record writer is closed"));
    return *writer_;
  }
  std::unique_ptr<format::RecordWriter> writer_;
};

// f() without the GIL; raises (with the GIL) when it fails.
template <typename F>
auto Unlocked(F f) {
  decltype(f()) r = Cancelled("not run");
  {
    py::gil_scoped_release release;
    r = f();
  }
  return ValueOrThrow(std::move(r));
}

// A dataset of shards of a target size through format::ShardWriter (same options and names).
// Own run: dataset.json is published at close(). With run_id (one part of a bigger run, e.g.
// shards for a table commit): close() only finishes the shards, listed by `shards`.
class PyShardWriter {
 public:
  PyShardWriter(const std::string& directory, const std::string& codec, int zstd_level,
                size_t zstd_frame_bytes, uint64_t target_shard_bytes, const std::string& prefix,
                bool overwrite, const std::string& run_id, const std::string& part)
      : directory_(directory) {
    format::ShardWriterOptions o;
    o.record.codec = ValueOrThrow(format::ParseCodec(codec));
    o.record.zstd_level = zstd_level;
    o.record.zstd_frame_bytes = zstd_frame_bytes;
    o.target_shard_bytes = target_shard_bytes;
    o.prefix = prefix;
    o.overwrite = overwrite;
    o.command = "python sluice.ShardWriter";
    o.run_id = run_id;
    o.part = part;
    std::string local;
    io::FileSystem* fs = ValueOrThrow(io::FileSystemFor(directory, &local));
    writer_ = Unlocked([&]() -> Result<std::unique_ptr<format::ShardWriter>> {
      SLUICE_RETURN_IF_ERROR(fs->CreateDirs(local));  // a part of a run creates none itself
      return format::ShardWriter::Open(fs, local, o);
    });
  }

  void Write(py::bytes record) {
    std::string_view view = record;
    format::ShardWriter& writer = Live();
    Status s;
    {
      py::gil_scoped_release release;
      s = writer.Write(ByteView(view));
    }
    ThrowIfError(s);
  }

  void Close() {
    if (!writer_ || closed_) return;
    Status s;
    {
      py::gil_scoped_release release;
      s = writer_->Close();
    }
    if (!s.ok()) writer_.reset();  // its files are deleted
    ThrowIfError(s);
    closed_ = true;
  }

  // Deletes every file written (a writer dropped unclosed does the same).
  void Abort() {
    if (closed_) ThrowStatus(FailedPrecondition("the shard writer has closed: its shards stay"));
    py::gil_scoped_release release;
    writer_.reset();
  }

  std::vector<std::string> Shards() {
    if (!closed_)
      ThrowStatus(
          FailedPrecondition("the shard writer's shards are listed after "
                             "close()"));
    std::vector<std::string> out;
    for (const auto& shard : writer_->manifest().shards) out.push_back(shard.path);
    return out;
  }
  uint64_t records_written() { return Existing().records_written(); }
  const std::string& run_id() { return Existing().run_id(); }
  const std::string& directory() const { return directory_; }

 private:
  format::ShardWriter& Existing() {
    if (!writer_) ThrowStatus(FailedPrecondition("the shard writer was aborted"));
    return *writer_;
  }
  format::ShardWriter& Live() {
    if (closed_) ThrowStatus(FailedPrecondition("the shard writer is closed"));
    return Existing();
  }
  const std::string directory_;
  std::unique_ptr<format::ShardWriter> writer_;
  bool closed_ = false;
};

}  // namespace

void RegisterWriters(py::module_& m) {
  using py::arg;
  py::class_<PyRecordWriter>(m, "RecordWriter",
                             "Writes one shard: TFRecord framing, codec 'zstd' (default), "
                             "'gzip' or 'none', plus its index. close() is required: the file "
                             "appears only then.")
      .def(py::init<const std::string&, const std::string&, int, size_t, bool>(), arg("path"),
           arg("codec") = "zstd", arg("zstd_level") = 3, arg("zstd_frame_bytes") = size_t{1} << 20,
           arg("write_index") = true)
      .def("write", &PyRecordWriter::Write, arg("record"))
      .def("close", &PyRecordWriter::Close)
      .def_property_readonly("records_written", &PyRecordWriter::records_written)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyRecordWriter& w, py::object type, py::args) {
        if (type.is_none()) w.Close();  // on an exception: no file (the writer aborts)
      });
  py::class_<PyShardWriter>(
      m, "ShardWriter",
      "Writes records into DIRECTORY as shards of about target_shard_bytes (each with its "
      "index), named '<prefix>-<run>-NNNNN.tfrecord.zst' so that they collide with no other "
      "writer's. close() is required. On its own it publishes dataset.json at close() (the "
      "dataset's commit point). With run_id (any string unique to this write, e.g. "
      "uuid.uuid4().hex) it is one part of a bigger run: close() only finishes the shards, e.g. "
      "for a table commit: Table.append(writer). An exception in a with block, abort(), or a "
      "writer dropped unclosed deletes every file written.")
      .def(py::init([](const py::object& directory, const std::string& codec, int zstd_level,
                       size_t zstd_frame_bytes, uint64_t target_shard_bytes,
                       const std::string& prefix, bool overwrite, const std::string& run_id,
                       const std::string& part) {
             auto path = py::module_::import("os").attr("fspath")(directory).cast<std::string>();
             return std::make_unique<PyShardWriter>(path, codec, zstd_level, zstd_frame_bytes,
                                                    target_shard_bytes, prefix, overwrite, run_id,
                                                    part);
           }),
           arg("directory"), py::kw_only(), arg("codec") = "zstd", arg("zstd_level") = 3,
           arg("zstd_frame_bytes") = size_t{1} << 20,
           arg("target_shard_bytes") = uint64_t{100'000'000}, arg("prefix") = "data",
           arg("overwrite") = false, arg("run_id") = "", arg("part") = "")
      .def("write", &PyShardWriter::Write, arg("record"))
      .def("close", &PyShardWriter::Close)
      .def("abort", &PyShardWriter::Abort)
      .def_property_readonly("shards", &PyShardWriter::Shards,
                             "The shards' paths relative to the directory (after close()).")
      .def_property_readonly("directory", &PyShardWriter::directory)
      .def_property_readonly("run_id", &PyShardWriter::run_id)
      .def_property_readonly("records_written", &PyShardWriter::records_written)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyShardWriter& w, py::object type, py::args) {
        if (type.is_none()) {
          w.Close();
        } else {
          w.Abort();
        }
      });
  m.def("make_example", &MakeExample, py::arg("features"),
        "A serialized tf.train.Example from {name: value}: bytes/str -> bytes_list, int -> "
        "int64_list, float -> float_list; lists and numpy arrays give lists of that kind.");
  m.def("_make_example_and_schema", &MakeExampleAndSchema, py::arg("features"));
}

}  // namespace sluice::python

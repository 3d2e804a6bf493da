// sluice._sluice._Dataset: the C++ Dataset, one method per stage with the Python names and
// arguments. Each method raises at once when the stage is invalid (C++ keeps such errors
// until MakeIterator; Python users expect them at the call). The Python class sluice.Dataset
// (python/sluice/dataset.py) wraps this one and remembers the recipe.
#include "dataset.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "errors.h"
#include "iterator.h"
#include "map.h"
#include "sluice/base/bytes.h"
#include "sluice/pipeline/dataset.h"
#include "tensors.h"
#include "vision.h"

namespace sluice::python {
namespace {

using pipeline::Dataset;

Dataset Checked(Dataset d) {
  ThrowIfError(d.status());
  return d;
}

std::optional<pipeline::ErrorPolicy> Policy(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return ValueOrThrow(pipeline::ParseErrorPolicy(*name));
}

pipeline::Schema SchemaFromSpecs(const py::dict& specs) {
  pipeline::Schema schema;
  for (auto [key, spec] : specs) {
    std::string name = py::str(key).cast<std::string>();
    UserFeature f = ParseUserFeature(name, spec);
    schema.Add(FeatureInfo{name, f.dtype, f.shape});
  }
  return schema;
}

pipeline::PaddingOptions Padding(size_t pad_to_multiple_of,
                                 const std::map<std::string, double>& pad_values, bool masks,
                                 const std::map<std::string, int64_t>& lengths,
                                 const std::string& side) {
  pipeline::PaddingOptions p;
  p.pad_to_multiple_of = std::max<size_t>(1, pad_to_multiple_of);
  p.pad_values = pad_values;
  p.masks = masks;
  p.lengths = lengths;
  if (side == "left") {
    p.side = pipeline::PaddingOptions::Side::kLeft;
  } else if (side != "right") {
    ThrowIfError(InvalidArgument("padding_side must be 'right' or 'left', got '" + side + "'"));
  }
  return p;
}

// cache_bytes: None, a number of bytes, or a size such as "200GB" (docs/cache.md).
uint64_t CacheBytes(const py::object& bytes) {
  if (bytes.is_none()) return 0;
  if (py::isinstance<py::str>(bytes)) {
    uint64_t n = 0;
    std::string text = bytes.cast<std::string>();
    if (!ParseByteSize(text, &n)) ThrowIfError(InvalidArgument("cache_bytes: not a size: " + text));
    return n;
  }
  int64_t n = bytes.cast<int64_t>();
  if (n < 0) ThrowIfError(InvalidArgument("cache_bytes must be >= 0"));
  return static_cast<uint64_t>(n);
}

Dataset Read(const std::vector<std::string>& paths, bool verify_crc, uint32_t parallelism,
             uint32_t chunk_records, const std::optional<std::string>& on_error,
             bool map_uncompressed, std::optional<bool> cache,
             const std::optional<std::string>& cache_dir, const py::object& cache_bytes,
             uint64_t chunk_bytes, bool keep_decoded_chunks) {
  pipeline::ReadOptions o;
  o.paths = paths;
  o.verify_crc = verify_crc;
  o.map_uncompressed = map_uncompressed;
  o.parallelism = parallelism;
  o.chunk_records = chunk_records;
  o.chunk_bytes = chunk_bytes;
  o.keep_decoded_chunks = keep_decoded_chunks;
  o.on_error = Policy(on_error);
  o.cache = cache;
  o.cache_dir = cache_dir.value_or("");
  o.cache_bytes = CacheBytes(cache_bytes);
  Result<Dataset> d = Cancelled("not read");
  {
    py::gil_scoped_release release;  // opens every shard's index
    d = Dataset::Read(o);
  }
  return Checked(ValueOrThrow(std::move(d)));
}

Dataset FromRecords(const std::vector<std::vector<py::bytes>>& shards, uint64_t chunk_bytes) {
  std::vector<std::vector<std::string>> data;
  for (const auto& shard : shards) {
    data.emplace_back();
    for (const py::bytes& r : shard) data.back().push_back(r.cast<std::string>());
  }
  return Checked(Dataset::FromSource(
      pipeline::NewMemorySource(std::move(data), std::max<uint64_t>(1, chunk_bytes))));
}

Dataset Shuffle(const Dataset& d, uint64_t seed, const std::string& mode, uint32_t block_shards,
                size_t buffer_size, uint64_t window_bytes, uint64_t window_chunks, uint32_t lanes) {
  pipeline::ShuffleOptions o;
  o.seed = seed;
  o.mode = ValueOrThrow(pipeline::ParseShuffleMode(mode));
  o.block_shards = block_shards;
  o.buffer_size = buffer_size;
  o.window_bytes = window_bytes;
  o.window_chunks = window_chunks;
  o.lanes = lanes;
  return Checked(d.Shuffle(o));
}

Dataset Shard(const Dataset& d, uint32_t rank, uint32_t world_size, const std::string& remainder) {
  return Checked(d.Shard(rank, world_size, ValueOrThrow(pipeline::ParseRemainder(remainder))));
}

Dataset ParseExample(const Dataset& d, const py::dict& features,
                     const std::optional<std::string>& on_error, int parallelism) {
  std::vector<pipeline::FeatureSpec> specs;
  for (auto [key, spec] : features) {
    std::string name = py::str(key).cast<std::string>();
    UserFeature f = ParseUserFeature(name, spec);
    specs.push_back(pipeline::FeatureSpec{name, f.dtype, f.shape, f.optional});
  }
  pipeline::ParseExampleOptions o;
  o.on_error = Policy(on_error);
  o.parallelism = parallelism;
  return Checked(d.ParseExample(std::move(specs), o));
}

Dataset Map(const Dataset& d, py::object fn, const std::string& name, int parallelism, bool ordered,
            std::optional<py::dict> output, const std::optional<std::string>& on_error,
            bool with_seed, size_t chunk_elements) {
  pipeline::MapOptions o;
  o.name = name;
  o.parallelism = parallelism;
  o.ordered = ordered;
  o.on_error = Policy(on_error);
  o.chunk_elements = chunk_elements;
  if (output) o.output_schema = SchemaFromSpecs(*output);
  pipeline::MapFn f;
  if (py::isinstance<py::str>(fn)) {
    f = BuiltinMap(fn.cast<std::string>());
    if (!f)
      ThrowStatus(InvalidArgument("map: no built-in function '" + fn.cast<std::string>() + "'"));
  } else {
    if (!PyCallable_Check(fn.ptr())) ThrowStatus(InvalidArgument("map: fn is not callable"));
    f = PythonMap(std::move(fn), with_seed);
  }
  return Checked(d.Map(std::move(f), o));
}

Dataset Filter(const Dataset& d, py::object predicate, const std::string& name,
               const std::optional<std::string>& on_error) {
  if (!PyCallable_Check(predicate.ptr())) ThrowStatus(InvalidArgument("filter: not callable"));
  pipeline::FilterOptions o;
  o.name = name;
  o.on_error = Policy(on_error);
  return Checked(d.Filter(PythonFilter(std::move(predicate)), o));
}

Dataset PaddedBatch(const Dataset& d, size_t batch_size, bool drop_remainder,
                    size_t pad_to_multiple_of, const std::map<std::string, double>& pad_values,
                    bool masks, const std::map<std::string, int64_t>& lengths,
                    const std::string& padding_side) {
  pipeline::PaddedBatchOptions o;
  o.batch_size = batch_size;
  o.drop_remainder = drop_remainder;
  o.padding = Padding(pad_to_multiple_of, pad_values, masks, lengths, padding_side);
  return Checked(d.PaddedBatch(o));
}

Dataset BucketByLength(const Dataset& d, const std::string& length_feature,
                       const std::vector<int64_t>& boundaries,
                       const std::vector<size_t>& batch_sizes, bool drop_remainder,
                       size_t pad_to_multiple_of, const std::map<std::string, double>& pad_values,
                       bool masks, const std::map<std::string, int64_t>& lengths,
                       const std::string& padding_side) {
  pipeline::BucketOptions o;
  o.length_feature = length_feature;
  o.boundaries = boundaries;
  o.batch_sizes = batch_sizes;
  o.drop_remainder = drop_remainder;
  o.padding = Padding(pad_to_multiple_of, pad_values, masks, lengths, padding_side);
  return Checked(d.BucketByLength(o));
}

std::unique_ptr<PyIterator> MakeIterator(const Dataset& d, uint32_t threads, uint64_t memory_budget,
                                         bool autotune, const std::string& on_error,
                                         const std::string& quarantine_path, uint64_t epoch,
                                         std::optional<py::bytes> state) {
  pipeline::PipelineOptions o;
  o.threads = threads;
  o.memory_budget_bytes = memory_budget;
  o.autotune = autotune;
  o.on_error = ValueOrThrow(pipeline::ParseErrorPolicy(on_error));
  o.quarantine_path = quarantine_path;
  o.epoch = epoch;
  Result<std::unique_ptr<pipeline::Iterator>> it = Cancelled("not made");
  {
    py::gil_scoped_release release;
    it = d.MakeIterator(o);
  }
  auto py_it = std::make_unique<PyIterator>(ValueOrThrow(std::move(it)));
  if (state) py_it->Restore(state->cast<std::string>());
  return py_it;
}

// The defaults of read() and shuffle() are the C++ options' own (ReadOptions,
// ShuffleOptions): the bindings take them from there, and `_sluice.DEFAULTS` hands them to
// the Python signatures (python/sluice/dataset.py), so each is written once.
py::dict Defaults() {
  const pipeline::ReadOptions r;
  const pipeline::ShuffleOptions s;
  py::dict read, shuffle, out;
  read["verify_crc"] = r.verify_crc;
  read["parallelism"] = r.parallelism;
  read["chunk_records"] = r.chunk_records;
  read["map_uncompressed"] = r.map_uncompressed;
  read["chunk_bytes"] = r.chunk_bytes;
  read["keep_decoded_chunks"] = r.keep_decoded_chunks;
  shuffle["seed"] = s.seed;
  shuffle["mode"] = std::string(pipeline::ShuffleModeName(s.mode));
  shuffle["block_shards"] = s.block_shards;
  shuffle["buffer_size"] = s.buffer_size;
  shuffle["window_bytes"] = s.window_bytes;
  shuffle["window_chunks"] = s.window_chunks;
  shuffle["lanes"] = s.lanes;
  out["read"] = read;
  out["shuffle"] = shuffle;
  return out;
}

}  // namespace

void RegisterDataset(py::module_& m) {
  using py::arg;
  const pipeline::ReadOptions r;
  const pipeline::ShuffleOptions s;
  m.attr("DEFAULTS") = Defaults();
  py::class_<Dataset>(m, "_Dataset")
      .def_static("read", &Read, arg("paths"), arg("verify_crc") = r.verify_crc,
                  arg("parallelism") = r.parallelism, arg("chunk_records") = r.chunk_records,
                  arg("on_error") = py::none(), arg("map_uncompressed") = r.map_uncompressed,
                  arg("cache") = py::none(), arg("cache_dir") = py::none(),
                  arg("cache_bytes") = py::none(), arg("chunk_bytes") = r.chunk_bytes,
                  arg("keep_decoded_chunks") = r.keep_decoded_chunks)
      .def_static("from_records", &FromRecords, arg("shards"), arg("chunk_bytes") = r.chunk_bytes)
      .def("shuffle", &Shuffle, arg("seed") = s.seed,
           arg("mode") = std::string(pipeline::ShuffleModeName(s.mode)),
           arg("block_shards") = s.block_shards, arg("buffer_size") = s.buffer_size,
           arg("window_bytes") = s.window_bytes, arg("window_chunks") = s.window_chunks,
           arg("lanes") = s.lanes)
      .def("shard", &Shard, arg("rank"), arg("world_size"), arg("remainder") = "drop")
      .def("parse_example", &ParseExample, arg("features"), arg("on_error") = py::none(),
           arg("parallelism") = -1)
      .def("map", &Map, arg("fn"), arg("name") = "", arg("parallelism") = -1, arg("ordered") = true,
           arg("output") = py::none(), arg("on_error") = py::none(), arg("with_seed") = false,
           arg("chunk_elements") = 32)
      .def("decode_image", &DecodeImage, arg("input"), arg("ops"), arg("layout") = "NCHW",
           arg("dtype") = "float32", arg("output") = "image", arg("keep_input") = false,
           arg("parallelism") = -1, arg("on_error") = py::none(), arg("dct_scaling") = true,
           arg("into_batch") = true)
      .def("filter", &Filter, arg("predicate"), arg("name") = "", arg("on_error") = py::none())
      .def(
          "batch",
          [](const Dataset& d, size_t batch_size, bool drop_remainder) {
            return Checked(d.Batch(batch_size, drop_remainder));
          },
          arg("batch_size"), arg("drop_remainder") = false)
      .def("padded_batch", &PaddedBatch, arg("batch_size"), arg("drop_remainder") = false,
           arg("pad_to_multiple_of") = 1, arg("pad_values") = std::map<std::string, double>(),
           arg("masks") = true, arg("lengths") = std::map<std::string, int64_t>(),
           arg("padding_side") = "right")
      .def("bucket_by_length", &BucketByLength, arg("length_feature"), arg("boundaries"),
           arg("batch_sizes"), arg("drop_remainder") = false, arg("pad_to_multiple_of") = 1,
           arg("pad_values") = std::map<std::string, double>(), arg("masks") = true,
           arg("lengths") = std::map<std::string, int64_t>(), arg("padding_side") = "right")
      .def(
          "prefetch", [](const Dataset& d, int64_t n) { return Checked(d.Prefetch(n)); },
          arg("buffer_size") = -1)
      .def(
          "repeat", [](const Dataset& d, int64_t n) { return Checked(d.Repeat(n)); },
          arg("epochs") = -1)
      .def(
          "take", [](const Dataset& d, uint64_t n) { return Checked(d.Take(n)); }, arg("count"))
      .def(
          "skip", [](const Dataset& d, uint64_t n) { return Checked(d.Skip(n)); }, arg("count"))
      .def_property_readonly("schema", [](const Dataset& d) { return SchemaToDict(d.schema()); })
      .def_property_readonly("shard_records", &Dataset::shard_records)
      .def_property_readonly("num_chunks",
                             [](const Dataset& d) { return ValueOrThrow(d.Chunks())->size(); })
      .def("make_iterator", &MakeIterator, arg("threads") = 0,
           arg("memory_budget") = uint64_t{1} << 30, arg("autotune") = true,
           arg("on_error") = "raise", arg("quarantine_path") = "", arg("epoch") = 0,
           arg("state") = py::none());
}

}  // namespace sluice::python

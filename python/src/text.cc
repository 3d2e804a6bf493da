#include "text.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>

#include "errors.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/text/stages.h"

namespace sluice::python {
namespace {

using pipeline::Dataset;
using text::Tokenizer;

// A loaded model shared by Python objects and the pipelines that tokenize with it.
struct PySentencePiece {
  std::shared_ptr<const Tokenizer> tokenizer;
};

PySentencePiece LoadModel(const std::string& path, bool add_bos, bool add_eos) {
  text::TokenizerOptions o;
  o.add_bos = add_bos;
  o.add_eos = add_eos;
  Result<std::unique_ptr<Tokenizer>> t = Cancelled("not loaded");
  {
    py::gil_scoped_release release;
    t = Tokenizer::Open(io::LocalFileSystem(), path, o);
  }
  return PySentencePiece{std::shared_ptr<const Tokenizer>(ValueOrThrow(std::move(t)))};
}

// The UTF-8 bytes of a str (CPython caches them in the object; for ASCII text they are the
// object's own storage) or the bytes of a bytes object (may hold invalid UTF-8, which encodes
// as U+FFFD), viewed without a copy: valid while the object lives.
std::string_view TextOf(const py::handle& item) {
  if (PyUnicode_Check(item.ptr())) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
    if (data == nullptr) throw py::error_already_set();  // e.g. a lone surrogate
    return std::string_view(data, static_cast<size_t>(size));
  }
  if (PyBytes_Check(item.ptr())) {
    return std::string_view(PyBytes_AS_STRING(item.ptr()),
                            static_cast<size_t>(PyBytes_GET_SIZE(item.ptr())));
  }
  ThrowStatus(InvalidArgument("encode: texts must be str or bytes, got " +
                              py::str(py::type::of(item)).cast<std::string>()));
}

// Encodes the texts with the GIL released. `keep` holds a reference to every text so that
// the views stay valid (an iterable may be a generator yielding temporaries).
text::RaggedIds EncodeTexts(const PySentencePiece& sp, const py::iterable& texts, size_t threads) {
  std::vector<py::object> keep;
  std::vector<std::string_view> views;
  if (py::isinstance<py::list>(texts) || py::isinstance<py::tuple>(texts)) {
    views.reserve(static_cast<size_t>(py::len(texts)));
  }
  for (py::handle item : texts) {
    views.push_back(TextOf(item));
    keep.push_back(py::reinterpret_borrow<py::object>(item));
  }
  text::RaggedIds ids;
  Status s;
  {
    py::gil_scoped_release release;
    s = sp.tokenizer->EncodeBatch(views, threads, &ids);
  }
  ThrowIfError(s);
  return ids;
}

// All ids in one int32 array and offsets (int64, one more than texts): text i's ids are
// values[offsets[i]:offsets[i+1]], the layout byte-string batches already use.
py::tuple EncodeRagged(const PySentencePiece& sp, const py::iterable& texts, size_t threads) {
  text::RaggedIds ids = EncodeTexts(sp, texts, threads);
  py::array_t<int32_t> values(static_cast<py::ssize_t>(ids.ids.size()));
  if (!ids.ids.empty()) std::memcpy(values.mutable_data(), ids.ids.data(), ids.ids.size() * 4);
  py::array_t<int64_t> offsets(static_cast<py::ssize_t>(ids.offsets.size()));
  int64_t* o = offsets.mutable_data();
  for (size_t i = 0; i < ids.offsets.size(); ++i) o[i] = static_cast<int64_t>(ids.offsets[i]);
  return py::make_tuple(std::move(values), std::move(offsets));
}

// One int32 array per text, views into one array holding all ids (built directly as views
// with a base, not by slicing through Python's indexing).
py::list Encode(const PySentencePiece& sp, const py::iterable& texts, size_t threads) {
  text::RaggedIds ids = EncodeTexts(sp, texts, threads);
  py::array_t<int32_t> all(static_cast<py::ssize_t>(ids.ids.size()));
  if (!ids.ids.empty()) std::memcpy(all.mutable_data(), ids.ids.data(), ids.ids.size() * 4);
  const int32_t* base = all.data();
  py::dtype int32 = py::dtype::of<int32_t>();
  py::list out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto n = static_cast<py::ssize_t>(ids.offsets[i + 1] - ids.offsets[i]);
    py::array view(int32, {n}, {static_cast<py::ssize_t>(sizeof(int32_t))}, base + ids.offsets[i],
                   all);
    PyList_SET_ITEM(out.ptr(), static_cast<py::ssize_t>(i), view.release().ptr());
  }
  return out;
}

std::optional<pipeline::ErrorPolicy> Policy(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return ValueOrThrow(pipeline::ParseErrorPolicy(*name));
}

Dataset Checked(Dataset d) {
  ThrowIfError(d.status());
  return d;
}

Dataset Tokenize(const Dataset& d, const std::string& feature, const PySentencePiece& model,
                 const std::string& output, const std::optional<std::string>& on_error,
                 bool replace_invalid_utf8, int parallelism) {
  text::TokenizeOptions o;
  o.feature = feature;
  o.output = output;
  o.on_error = Policy(on_error);
  o.replace_invalid_utf8 = replace_invalid_utf8;
  o.parallelism = parallelism;
  return Checked(text::Tokenize(d, model.tokenizer, o));
}

Dataset Pack(const Dataset& d, size_t seq_len, int32_t eos_id, const std::string& feature,
             int32_t pad_id, bool continue_positions, bool drop_remainder) {
  text::PackOptions o;
  o.feature = feature;
  o.packing.seq_len = seq_len;
  o.packing.eos_id = eos_id;
  o.packing.pad_id = pad_id;
  o.packing.continue_positions = continue_positions;
  o.packing.drop_remainder = drop_remainder;
  return Checked(text::Pack(d, o));
}

Dataset ReadTokenCacheSource(const std::string& prefix) {
  Result<std::shared_ptr<pipeline::RecordSource>> source = Cancelled("not opened");
  {
    py::gil_scoped_release release;
    source = text::OpenTokenCacheSource(io::LocalFileSystem(), prefix);
  }
  return Checked(Dataset::FromSource(ValueOrThrow(std::move(source))));
}

}  // namespace

void RegisterText(py::module_& m) {
  using py::arg;
  py::class_<PySentencePiece>(m, "_SentencePiece")
      .def(py::init(&LoadModel), arg("path"), arg("add_bos") = false, arg("add_eos") = false)
      .def("encode", &Encode, arg("texts"), arg("threads") = 0)
      .def("encode_ragged", &EncodeRagged, arg("texts"), arg("threads") = 0)
      .def("decode",
           [](const PySentencePiece& sp, const std::vector<int32_t>& ids) {
             return ValueOrThrow(sp.tokenizer->Decode(ids));
           })
      .def_property_readonly("vocab_size",
                             [](const PySentencePiece& sp) { return sp.tokenizer->vocab_size(); })
      .def_property_readonly("bos_id",
                             [](const PySentencePiece& sp) { return sp.tokenizer->bos_id(); })
      .def_property_readonly("eos_id",
                             [](const PySentencePiece& sp) { return sp.tokenizer->eos_id(); })
      .def_property_readonly("pad_id",
                             [](const PySentencePiece& sp) { return sp.tokenizer->pad_id(); })
      .def_property_readonly("unk_id",
                             [](const PySentencePiece& sp) { return sp.tokenizer->unk_id(); });

  auto cls = py::reinterpret_borrow<py::class_<Dataset>>(m.attr("_Dataset"));
  cls.def("tokenize", &Tokenize, arg("feature"), arg("model"), arg("output") = "tokens",
          arg("on_error") = py::none(), arg("replace_invalid_utf8") = false,
          arg("parallelism") = -1);
  cls.def("pack", &Pack, arg("seq_len"), arg("eos_id") = -1, arg("feature") = "tokens",
          arg("pad_id") = 0, arg("continue_positions") = false, arg("drop_remainder") = false);
  cls.def_static("read_token_cache", &ReadTokenCacheSource, arg("prefix"));
  cls.def(
      "decode_token_cache",
      [](const Dataset& d, int width, const std::string& output) {
        if (width != 2 && width != 4) ThrowStatus(InvalidArgument("token width must be 2 or 4"));
        return Checked(
            text::DecodeTokenCacheRecords(d, static_cast<text::TokenWidth>(width), output));
      },
      arg("width"), arg("output") = "tokens");
  m.def(
      "_token_cache_width",
      [](const std::string& prefix) {
        return static_cast<int>(ValueOrThrow(text::TokenCacheWidth(io::LocalFileSystem(), prefix)));
      },
      arg("prefix"));
}

}  // namespace sluice::python

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

// str -> its UTF-8; bytes as they are (may hold invalid UTF-8, which encodes as U+FFFD).
std::string TextOf(const py::handle& item) {
  if (py::isinstance<py::bytes>(item)) return item.cast<std::string>();
  if (py::isinstance<py::str>(item)) return item.cast<std::string>();
  ThrowStatus(InvalidArgument("encode: texts must be str or bytes, got " +
                              py::str(py::type::of(item)).cast<std::string>()));
}

// One int32 array per text, views into one array holding all ids.
py::list Encode(const PySentencePiece& sp, const py::iterable& texts, size_t threads) {
  std::vector<std::string> owned;
  for (py::handle item : texts) owned.push_back(TextOf(item));
  text::RaggedIds ids;
  Status s;
  {
    py::gil_scoped_release release;
    std::vector<std::string_view> views(owned.begin(), owned.end());
    s = sp.tokenizer->EncodeBatch(views, threads, &ids);
  }
  ThrowIfError(s);
  py::array_t<int32_t> all(static_cast<py::ssize_t>(ids.ids.size()));
  if (!ids.ids.empty()) std::memcpy(all.mutable_data(), ids.ids.data(), ids.ids.size() * 4);
  py::list out;
  for (size_t i = 0; i < ids.size(); ++i) {
    out.append(all[py::slice(static_cast<py::ssize_t>(ids.offsets[i]),
                             static_cast<py::ssize_t>(ids.offsets[i + 1]), 1)]);
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

// sluice.text in C++: the SentencePiece tokenizer class and the text stages of _Dataset
// (tokenize, pack, read_token_cache + decode_token_cache). docs/python.md, "Text".
#pragma once

#include <pybind11/pybind11.h>

namespace sluice::python {
// After RegisterDataset: adds the text stages to _Dataset.
void RegisterText(pybind11::module_& m);
}  // namespace sluice::python

// Status -> Python exception. Every StatusCode has a class, all subclasses of sluice.Error;
// the message is the C++ message (file, byte offset, record). Exceptions raised by Python
// callables inside the pipeline (map, filter) cross the C++ threads as a Status that carries
// a ticket; they come out again as the original exception object, with the pipeline's
// context (stage, shard, record) added as a note.
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

#include "sluice/base/status.h"

namespace sluice::python {

namespace py = pybind11;

// Creates sluice.Error and its subclasses in `m`.
void RegisterErrors(py::module_& m);

// Raises the exception for a non-OK status: the original Python exception when the status
// carries a ticket for one, else the class of its code.
[[noreturn]] void ThrowStatus(const Status& status);

// `text` (a message, a path) as a str: bytes that are not UTF-8 become \xNN
// ("backslashreplace") instead of failing the conversion, so no message vanishes.
py::str MessageText(std::string_view text);

// Unwraps a Result or raises.
template <typename T>
T ValueOrThrow(Result<T> r) {
  if (!r.ok()) ThrowStatus(r.status());
  return std::move(r).value();
}
inline void ThrowIfError(const Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

// Turns the Python exception being handled into a Status for the pipeline; GIL held.
// Exceptions that are not `Exception`s (KeyboardInterrupt, SystemExit) become kCancelled so
// no error policy can skip them. The message is "ValueError: <message>" (the pipeline adds
// stage and record).
Status StatusFromPython(py::error_already_set& e);

}  // namespace sluice::python

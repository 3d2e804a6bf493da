// The Python iterator over a running pipeline. Every call into the pipeline releases the GIL
// (pool threads may need it for Python maps); Next() waits in slices of 50 ms, checking for
// Ctrl-C between them (pipeline/wait_check.h). After a KeyboardInterrupt the iterator is
// still usable: its next `next()` continues right after the last batch it returned.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "sluice/pipeline/iterator.h"

namespace sluice::python {

namespace py = pybind11;

class PyIterator {
 public:
  explicit PyIterator(std::unique_ptr<pipeline::Iterator> it);
  ~PyIterator();
  PyIterator(const PyIterator&) = delete;
  PyIterator& operator=(const PyIterator&) = delete;

  py::object Next();
  py::bytes State();
  void Restore(const std::string& state);
  py::dict Stats();
  std::string Report();
  py::dict Schema();
  // Stops the pipeline's threads and frees its buffers (arrays handed out stay valid).
  void Close();
  bool closed() const { return it_ == nullptr; }

  // Closes every live iterator: run at interpreter exit, while pool threads can still take
  // the GIL (they cannot once finalization started).
  static void CloseAll();
  // In a child process after fork(): makes every live iterator closed without touching its
  // pipeline (whose threads stayed in the parent).
  static void AbandonAllAfterFork();

 private:
  pipeline::Iterator& Live();
  [[noreturn]] void Fail(const Status& status, PyObject* interrupt[3]);
  void PrepareResume();

  // Marks the iterator in use by one Python thread while the GIL is released (a pipeline
  // has one consumer): a second thread gets an error instead of a data race.
  class InUse;

  bool busy_ = false;  // guarded by the GIL
  std::unique_ptr<pipeline::Iterator> it_;
  pipeline::Element element_;  // reused across Next calls
  std::vector<py::str> names_;
  bool resume_ = false;  // restore resume_state_ before the next Next (after Ctrl-C)
  std::string resume_state_;
};

void RegisterIterator(py::module_& m);

// Schema -> {name: "dtype[dims]"} (the spec grammar of parse_example and map's output).
py::dict SchemaToDict(const pipeline::Schema& schema);

}  // namespace sluice::python

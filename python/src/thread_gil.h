// Taking the GIL on pipeline threads, for Python map and filter functions.
#pragma once

#include <Python.h>

namespace sluice::python {

// Holds the GIL for its lifetime, on any thread. A pipeline pool thread (which Python did
// not create) gets a Python thread state on first use and keeps it until the thread ends;
// pybind11's gil_scoped_acquire would make and delete one per call, which costs
// microseconds per element and, under tracemalloc on CPython 3.11, races its allocator hooks
// (PyThreadState_New allocates without the GIL) and crashes. Threads Python knows (the
// caller's, which runs stages itself while it waits) use their own thread state.
class PipelineThreadGil {
 public:
  PipelineThreadGil();
  ~PipelineThreadGil() { PyGILState_Release(state_); }
  PipelineThreadGil(const PipelineThreadGil&) = delete;
  PipelineThreadGil& operator=(const PipelineThreadGil&) = delete;

 private:
  PyGILState_STATE state_;
};

// Whether Python objects may still be touched (not during or after interpreter shutdown).
inline bool PythonAlive() { return Py_IsInitialized() && !_Py_IsFinalizing(); }

}  // namespace sluice::python

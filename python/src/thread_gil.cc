#include "thread_gil.h"

#include <memory>

namespace sluice::python {
namespace {

// The thread state of a pool thread, made by the first PipelineThreadGil on it. Kept
// attached through PyGILState's counter (left at 1 between calls) and deleted when the
// thread exits; thread pools end with their iterator, which PyIterator::Close destroys with
// the GIL released, so the exiting thread can take it. Left alone during shutdown.
class KeptThreadState {
 public:
  KeptThreadState() {
    PyGILState_Ensure();  // makes the thread state; counter 1, GIL held
    PyEval_SaveThread();  // release the GIL, keep the thread state
  }
  ~KeptThreadState() {
    if (!PythonAlive()) return;
    PyGILState_Ensure();                      // counter 2, GIL held
    PyGILState_Release(PyGILState_LOCKED);    // counter 1, GIL still held
    PyGILState_Release(PyGILState_UNLOCKED);  // counter 0: clears and deletes the thread state
  }
};

thread_local std::unique_ptr<KeptThreadState> kept;

}  // namespace

PipelineThreadGil::PipelineThreadGil() {
  if (!kept && PyGILState_GetThisThreadState() == nullptr) {
    kept = std::make_unique<KeptThreadState>();
  }
  state_ = PyGILState_Ensure();
}

}  // namespace sluice::python

#include "iterator.h"

#include <set>

#include "errors.h"
#include "sluice/pipeline/wait_check.h"
#include "tensors.h"

namespace sluice::python {
namespace {

// Guarded by the GIL.
std::set<PyIterator*>& LiveIterators() {
  static auto* live = new std::set<PyIterator*>();  // intentional leak: used at exit
  return *live;
}

// The wait check of Next(): takes the GIL and runs Python's signal handlers (only the main
// thread runs them; elsewhere this is a no-op). A raised exception (KeyboardInterrupt) is
// kept in `pending` and raised once Next has unwound.
struct SignalCheck {
  PyObject* pending[3] = {nullptr, nullptr, nullptr};  // type, value, traceback

  static Status Run(void* arg) {
    auto* self = static_cast<SignalCheck*>(arg);
    PyGILState_STATE gil = PyGILState_Ensure();
    int failed = PyErr_CheckSignals();
    if (failed) PyErr_Fetch(&self->pending[0], &self->pending[1], &self->pending[2]);
    PyGILState_Release(gil);
    return failed ? Cancelled("interrupted by a signal") : Status::OK();
  }
};

py::dict StageStatsToDict(const pipeline::StageStats& s) {
  py::dict d;
  d["name"] = s.name;
  d["elements"] = s.elements;
  d["bytes"] = s.bytes;
  d["busy_seconds"] = s.busy_seconds;
  d["input_wait_seconds"] = s.input_wait_seconds;
  d["output_wait_seconds"] = s.output_wait_seconds;
  d["buffered"] = s.buffered;
  d["buffer_capacity"] = s.buffer_capacity;
  d["parallelism"] = s.parallelism;
  d["consumer_share"] = s.consumer_share;
  d["skipped"] = s.skipped;
  d["quarantined"] = s.quarantined;
  d["chunk_decodes"] = s.chunk_decodes;
  d["chunk_fetched_bytes"] = s.chunk_fetched_bytes;
  d["chunk_loads_on_demand"] = s.chunk_loads_on_demand;
  d["chunk_evictions"] = s.chunk_evictions;
  d["chunk_takes"] = s.chunk_takes;
  d["chunk_kept"] = s.chunk_kept;
  return d;
}

py::dict CacheStatsToDict(const io::cache::CacheStats& c) {
  py::dict d;
  d["dir"] = c.dir;
  d["policy"] = c.policy;
  // Why reads bypass the cache (an unusable directory), else None.
  d["bypassed"] = c.bypassed.empty() ? py::object(py::none()) : py::object(MessageText(c.bypassed));
  d["capacity_bytes"] = c.capacity_bytes;
  d["used_bytes"] = c.used_bytes;
  d["reads"] = c.reads;
  d["hits"] = c.hits;
  d["joined"] = c.joined;
  d["misses"] = c.misses;
  d["hit_rate"] = c.hit_rate();
  d["lru_hit_rate"] = c.lru_hit_rate();
  d["fetches"] = c.fetches;
  d["fetched_bytes"] = c.fetched_bytes;
  d["prefetches"] = c.prefetches;
  d["prefetched_bytes"] = c.prefetched_bytes;
  d["stored"] = c.stored;
  d["evictions"] = c.evictions;
  d["evicted_bytes"] = c.evicted_bytes;
  d["skipped"] = c.skipped;
  d["damaged"] = c.damaged;
  d["lock_timeouts"] = c.lock_timeouts;
  d["read_errors"] = c.read_errors;
  d["disk_timeouts"] = c.disk_timeouts;
  d["fetch_wait_seconds"] = c.fetch_wait_seconds;
  return d;
}

// The process's HTTP requests since the iterator began (S3, WebHDFS): the stall report's
// network line as numbers.
py::dict NetworkStatsToDict(const io::HttpEngineStats& n) {
  py::dict d;
  d["in_flight"] = n.in_flight;
  d["queued"] = n.queued;
  d["requests"] = n.requests;
  d["failed"] = n.failed;
  d["attempts"] = n.attempts;
  d["retries"] = n.retries;
  d["hedges"] = n.hedges;
  d["hedges_won"] = n.hedges_won;
  d["bytes_received"] = n.bytes_received;
  d["bytes_sent"] = n.bytes_sent;
  d["first_byte_p50_ms"] = n.first_byte_p50_ms;
  d["first_byte_p95_ms"] = n.first_byte_p95_ms;
  return d;
}

}  // namespace

py::dict SchemaToDict(const pipeline::Schema& schema) {
  py::dict d;
  for (const FeatureInfo& f : schema.features()) {
    d[py::str(f.name)] = std::string(pipeline::DTypeName(f.dtype)) + f.shape.ToString();
  }
  return d;
}

class PyIterator::InUse {
 public:
  explicit InUse(PyIterator* it) : it_(it) {
    if (it_->busy_) {
      ThrowStatus(FailedPrecondition(
          "the iterator is in use by another thread (a pipeline has one consumer)"));
    }
    it_->busy_ = true;
  }
  ~InUse() { it_->busy_ = false; }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;

 private:
  PyIterator* it_;
};

PyIterator::PyIterator(std::unique_ptr<pipeline::Iterator> it)
    : it_(std::move(it)), names_(SchemaNames(it_->schema())) {
  LiveIterators().insert(this);
}

// Never busy here: a thread inside a method holds a reference to the Python object.
PyIterator::~PyIterator() { Close(); }

void PyIterator::Close() {
  if (!it_) return;
  InUse in_use(this);
  LiveIterators().erase(this);
  std::unique_ptr<pipeline::Iterator> it = std::move(it_);
  py::gil_scoped_release release;  // pool threads may be waiting for the GIL in a Python map
  it.reset();
  element_ = pipeline::Element();
}

void PyIterator::CloseAll() {
  std::set<PyIterator*> live = LiveIterators();
  for (PyIterator* it : live) it->Close();
}

void PyIterator::AbandonAllAfterFork() {
  for (PyIterator* py_it : LiveIterators()) {
    // The pipeline's threads did not survive fork(): destroying it would join threads that
    // do not exist, and its mutexes may be held forever. Leak it, and the buffers of the
    // last element (they return to its pool).
    (void)py_it->it_.release();
    (void)new pipeline::Element(std::move(py_it->element_));
  }
  LiveIterators().clear();
}

pipeline::Iterator& PyIterator::Live() {
  if (!it_) ThrowStatus(FailedPrecondition("the iterator is closed"));
  return *it_;
}

void PyIterator::PrepareResume() {
  Result<std::string> state = std::string();
  {
    py::gil_scoped_release release;
    state = it_->Save();
  }
  if (state.ok()) {
    resume_state_ = std::move(state).value();
    resume_ = true;
  }
}

void PyIterator::Fail(const Status& status, PyObject* interrupt[3]) {
  if (interrupt[0] != nullptr) {
    PrepareResume();
    PyErr_Restore(interrupt[0], interrupt[1], interrupt[2]);
    throw py::error_already_set();
  }
  if (status.code() == StatusCode::kCancelled) {
    // Interrupted elsewhere (e.g. KeyboardInterrupt inside a Python map on this thread).
    PrepareResume();
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  ThrowStatus(status);
}

py::object PyIterator::Next() {
  pipeline::Iterator& it = Live();
  InUse in_use(this);
  if (resume_) {
    Status restored;
    {
      py::gil_scoped_release release;
      restored = it.Restore(resume_state_);
    }
    resume_ = false;
    ThrowIfError(restored);
  }
  SignalCheck check;
  Result<bool> more = false;
  {
    py::gil_scoped_release release;
    pipeline::ScopedWaitCheck wait(&SignalCheck::Run, &check);
    more = it.Next(&element_);
  }
  if (!more.ok()) Fail(more.status(), check.pending);
  if (!*more) throw py::stop_iteration();
  return ElementToDict(element_, names_);
}

py::bytes PyIterator::State() {
  pipeline::Iterator& it = Live();
  InUse in_use(this);
  if (resume_) return py::bytes(resume_state_);
  Result<std::string> state = std::string();
  {
    py::gil_scoped_release release;
    state = it.Save();
  }
  return py::bytes(ValueOrThrow(std::move(state)));
}

void PyIterator::Restore(const std::string& state) {
  pipeline::Iterator& it = Live();
  InUse in_use(this);
  Status s;
  {
    py::gil_scoped_release release;
    s = it.Restore(state);
  }
  resume_ = false;
  ThrowIfError(s);
}

py::dict PyIterator::Stats() {
  pipeline::PipelineStats s = Live().stats();
  py::dict d;
  d["wall_seconds"] = s.wall_seconds;
  d["consumer_wait_seconds"] = s.consumer_wait_seconds;
  d["elements"] = s.elements;
  d["threads"] = s.threads;
  d["memory_budget_bytes"] = s.memory_budget_bytes;
  d["memory_used_bytes"] = s.memory_used_bytes;
  d["memory_peak_bytes"] = s.memory_peak_bytes;
  d["buffer_allocations"] = s.buffer_allocations;
  d["autotune_steps"] = s.autotune_steps;
  int b = s.bottleneck();
  d["bottleneck"] =
      b >= 0 ? py::object(py::str(s.stages[static_cast<size_t>(b)].name)) : py::none();
  py::list stages;
  for (const pipeline::StageStats& st : s.stages) stages.append(StageStatsToDict(st));
  d["stages"] = stages;
  d["cache"] = s.cache ? py::object(CacheStatsToDict(*s.cache)) : py::none();
  d["network"] = s.network ? py::object(NetworkStatsToDict(*s.network)) : py::none();
  return d;
}

std::string PyIterator::Report() { return Live().Report(); }

py::dict PyIterator::Schema() { return SchemaToDict(Live().schema()); }

void RegisterIterator(py::module_& m) {
  py::class_<PyIterator>(m, "Iterator",
                         "A running pipeline. Iterating yields dicts of numpy arrays (Strings "
                         "for byte strings); state() returns bytes from which "
                         "Dataset.iterator(state=...) continues exactly here.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyIterator::Next)
      .def("state", &PyIterator::State,
           "The state after the last element returned: small bytes, restorable in O(1).")
      .def("restore", &PyIterator::Restore, py::arg("state"),
           "Continues from a state (of any iterator of the same pipeline).")
      .def("stats", &PyIterator::Stats, "What the pipeline measured about itself (a dict).")
      .def("report", &PyIterator::Report,
           "The stall report: how long the trainer waited, and which stage limits throughput.")
      .def_property_readonly("schema", &PyIterator::Schema)
      .def_property_readonly("closed", &PyIterator::closed)
      .def("close", &PyIterator::Close,
           "Stops the pipeline's threads now (arrays already returned stay valid).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyIterator& it, py::args) { it.Close(); });
  m.def("_close_all_iterators", &PyIterator::CloseAll);
  m.def("_abandon_iterators_after_fork", &PyIterator::AbandonAllAfterFork);
}

}  // namespace sluice::python

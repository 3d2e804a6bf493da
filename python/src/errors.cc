#include "errors.h"

#include <array>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

namespace sluice::python {
namespace {

struct ErrorClass {
  StatusCode code;
  const char* name;
  PyObject* extra_base;  // a built-in class the error also derives from, or null
};

// Classes by StatusCode (kOk's slot is sluice.Error itself).
std::array<PyObject*, static_cast<size_t>(StatusCode::kInternal) + 1> classes{};

// Python exceptions raised inside map / filter wait here while their Status travels through
// the pipeline. Bounded: tickets of errors an error policy skipped are never claimed.
class ExceptionTickets {
 public:
  static constexpr size_t kMaxKept = 64;

  uint64_t Put(py::object exc) {
    std::lock_guard<std::mutex> l(mu_);
    uint64_t ticket = ++last_;
    kept_.emplace_back(ticket, std::move(exc));
    if (kept_.size() > kMaxKept) {
      // Destroying a Python object may run arbitrary code: never under mu_.
      dropped_.push_back(std::move(kept_.front().second));
      kept_.pop_front();
    }
    return ticket;
  }
  py::object Take(uint64_t ticket) {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->first == ticket) {
        py::object exc = std::move(it->second);
        kept_.erase(it);
        return exc;
      }
    }
    return py::object();
  }
  // Called with the GIL held and outside mu_.
  void CollectDropped() {
    std::deque<py::object> dropped;
    {
      std::lock_guard<std::mutex> l(mu_);
      dropped.swap(dropped_);
    }
  }

 private:
  std::mutex mu_;
  uint64_t last_ = 0;
  std::deque<std::pair<uint64_t, py::object>> kept_;
  std::deque<py::object> dropped_;
};

ExceptionTickets& Tickets() {
  // Intentional leak: Python objects must not be destroyed after the interpreter is gone.
  static auto* tickets = new ExceptionTickets();
  return *tickets;
}

constexpr std::string_view kTicketTag = " [python exception #";

// Splits "message [python exception #17]" into the message and the ticket (0: none).
std::pair<std::string, uint64_t> SplitTicket(const std::string& message) {
  size_t at = message.rfind(kTicketTag);
  if (at == std::string::npos) return {message, 0};
  size_t digits = at + kTicketTag.size();
  size_t end = message.find(']', digits);
  if (end == std::string::npos || end == digits) return {message, 0};
  uint64_t ticket = 0;
  for (size_t i = digits; i < end; ++i) {
    if (message[i] < '0' || message[i] > '9') return {message, 0};
    ticket = ticket * 10 + static_cast<uint64_t>(message[i] - '0');
  }
  return {message.substr(0, at) + message.substr(end + 1), ticket};
}

}  // namespace

void RegisterErrors(py::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "sluice.Error",
      "Base class of sluice's errors. `code` names the error (e.g. 'DataLoss'); the "
      "message names the file, byte offset and record when the error is about data.",
      PyExc_Exception, nullptr);
  PyObject_SetAttrString(base, "code", py::str("Error").ptr());
  m.add_object("Error", py::handle(base));
  classes[0] = base;

  const ErrorClass table[] = {
      {StatusCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
      {StatusCode::kNotFound, "NotFoundError", PyExc_LookupError},
      {StatusCode::kAlreadyExists, "AlreadyExistsError", nullptr},
      {StatusCode::kDataLoss, "DataLossError", nullptr},
      {StatusCode::kOutOfRange, "OutOfRangeError", nullptr},
      {StatusCode::kIoError, "IoError", PyExc_OSError},
      {StatusCode::kResourceExhausted, "ResourceExhaustedError", nullptr},
      {StatusCode::kFailedPrecondition, "FailedPreconditionError", nullptr},
      {StatusCode::kCancelled, "CancelledError", nullptr},
      {StatusCode::kUnimplemented, "UnimplementedError", PyExc_NotImplementedError},
      {StatusCode::kInternal, "InternalError", nullptr},
  };
  for (const ErrorClass& c : table) {
    py::tuple bases = c.extra_base ? py::make_tuple(py::handle(base), py::handle(c.extra_base))
                                   : py::make_tuple(py::handle(base));
    std::string qualified = std::string("sluice.") + c.name;
    PyObject* cls = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    PyObject_SetAttrString(cls, "code", py::str(std::string(StatusCodeName(c.code))).ptr());
    m.add_object(c.name, py::handle(cls));
    classes[static_cast<size_t>(c.code)] = cls;
  }
  // For tests: raises what a status of code `code` ("DataLoss", ...) raises.
  m.def("_raise_status", [](const std::string& code, const std::string& message) {
    for (size_t i = 1; i < classes.size(); ++i) {
      StatusCode c = static_cast<StatusCode>(i);
      if (StatusCodeName(c) == code) ThrowStatus(Status(c, message));
    }
    ThrowStatus(InvalidArgument("no status code '" + code + "'"));
  });
}

py::str MessageText(std::string_view text) {
  PyObject* s =
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

void ThrowStatus(const Status& status) {
  auto [message, ticket] = SplitTicket(status.message());
  if (ticket != 0) {
    py::object exc = Tickets().Take(ticket);
    Tickets().CollectDropped();
    if (exc) {
      // The pipeline's context (stage, shard, record) joins the original exception.
      if (status.code() != StatusCode::kCancelled && py::hasattr(exc, "add_note")) {
        exc.attr("add_note")("sluice: " + message);
      }
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
      throw py::error_already_set();
    }
  }
  size_t code = static_cast<size_t>(status.code());
  PyObject* cls = code < classes.size() && classes[code] ? classes[code] : classes[0];
  // Not PyErr_SetString: it decodes strictly, and a message holding bytes that are not UTF-8
  // left an exception whose str() is empty.
  PyErr_SetObject(cls, MessageText(message).ptr());
  throw py::error_already_set();
}

Status StatusFromPython(py::error_already_set& e) {
  bool is_exception = e.matches(PyExc_Exception);
  // A sluice error raised by the callable keeps its code.
  StatusCode code = StatusCode::kInvalidArgument;
  for (size_t i = 1; i < classes.size(); ++i) {
    if (classes[i] && e.matches(classes[i])) code = static_cast<StatusCode>(i);
  }
  if (!is_exception) code = StatusCode::kCancelled;
  std::string text = py::str(e.type().attr("__name__")).cast<std::string>() + ": " +
                     py::str(e.value()).cast<std::string>();
  if (e.trace()) PyException_SetTraceback(e.value().ptr(), e.trace().ptr());
  uint64_t ticket = Tickets().Put(py::reinterpret_borrow<py::object>(e.value()));
  Tickets().CollectDropped();
  return Status(code, text + std::string(kTicketTag) + std::to_string(ticket) + "]");
}

}  // namespace sluice::python
